-- Asset variant_labels: every variant's labels, inherited from its parent or judged as a hole.
-- key: variant_id, chunk_id
-- (Checked by the store after each write, in its transaction, rather than a PRIMARY KEY: DuckDB holds a key's
-- index of every inserted row in memory until the commit, some 500 MiB for the 7.9 million rows of ten times
-- the paper, and fails under a memory limit instead of spilling.)
CREATE TABLE IF NOT EXISTS variant_labels (
    variant_id     VARCHAR NOT NULL,
    parent_id      VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,
    chunk_id       VARCHAR NOT NULL,
    d1_topic       BOOLEAN NOT NULL,
    d2_meaningful  TINYINT,
    d3_actionable  TINYINT,
    d4_density     TINYINT,
    score          TINYINT NOT NULL,
    origin         VARCHAR NOT NULL,  -- inherited | hole
    judge_model    VARCHAR NOT NULL,
    prompt_hash    VARCHAR NOT NULL
);
