-- Asset query_gate_decisions: the answerability gate's decision for every sampled chunk.
CREATE TABLE IF NOT EXISTS query_gate_decisions (
    seed_chunk_id   VARCHAR NOT NULL PRIMARY KEY,
    source          VARCHAR NOT NULL,
    tier            VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,  -- kept | not_answerable | empty_query | too_long | duplicate_query | llm_failed
    query_text      VARCHAR,           -- normalised question (null when none)
    raw_query       VARCHAR,           -- the question as answered
    words           BIGINT,
    reason          VARCHAR,
    reasoning       VARCHAR,
    error           VARCHAR,           -- client error when llm_failed
    model           VARCHAR NOT NULL,
    prompt_hash     VARCHAR NOT NULL,
    temperature     DOUBLE NOT NULL,
    corpus_version  VARCHAR NOT NULL
);
