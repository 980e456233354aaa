-- Upstream rows of the mamabench pool 'healthbench_oss_eval', one per row of its file(s), every native field in the JSON column record.
CREATE TABLE IF NOT EXISTS mamabench_raw_healthbench_oss_eval (
    origin          VARCHAR NOT NULL,   -- file name inside the hub repo / folder
    upstream_index  BIGINT  NOT NULL,   -- 0-based data row inside that file
    upstream_id     VARCHAR,            -- upstream id column, when the pool has one
    record          VARCHAR NOT NULL,
    sha256          VARCHAR NOT NULL,   -- of the file
    revision        VARCHAR             -- hub commit, null for local files
);
