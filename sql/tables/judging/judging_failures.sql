-- Asset judging_failures: pooled pairs without a label, with the reason.
CREATE TABLE IF NOT EXISTS judging_failures (
    query_id        VARCHAR NOT NULL,
    chunk_id        VARCHAR NOT NULL,
    tier            VARCHAR,
    failure_reason  VARCHAR NOT NULL,
    PRIMARY KEY (query_id, chunk_id)
);
