-- Asset multipassage_fact_labels: for every pooled pair of the multi-passage track, which of the question's
-- facts the chunk states (the judge, one request per pair), or failed.
CREATE TABLE IF NOT EXISTS multipassage_fact_labels (
    query_id              VARCHAR NOT NULL,
    chunk_id              VARCHAR NOT NULL,
    required_piece        BOOLEAN NOT NULL,   -- a chunk of the question's set
    status                VARCHAR NOT NULL,   -- labelled | failed
    failure_reason        VARCHAR,            -- set when failed: client status and error, or a missing input
    facts                 BIGINT[],           -- numbers (from 1) of the facts stated; NULL when failed
    judge_model           VARCHAR NOT NULL,
    prompt_hash           VARCHAR NOT NULL,   -- the fact judge's template hash
    PRIMARY KEY (query_id, chunk_id)
);
