-- Where each mamabench pool came from: one row per file.
CREATE TABLE IF NOT EXISTS mamabench_provenance (
    pool      VARCHAR NOT NULL,
    origin    VARCHAR NOT NULL,
    sha256    VARCHAR NOT NULL,
    revision  VARCHAR,
    rows      BIGINT  NOT NULL,
    licence   VARCHAR NOT NULL,
    location  VARCHAR NOT NULL   -- local | hf://datasets/<repo_id>
);
