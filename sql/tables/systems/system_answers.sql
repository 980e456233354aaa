-- Asset system_answers: one row per (system, item), partition = system.
-- status: ok | parse_failed | transport_failed (failures keep their reason in error, answer null).
-- answer: the letter (mcq under JSON-schema output) or the text; chunk_ids: what a RAG system was given.
CREATE TABLE IF NOT EXISTS system_answers (
    system       VARCHAR NOT NULL,
    item_id      VARCHAR NOT NULL,
    track        VARCHAR NOT NULL,
    status       VARCHAR NOT NULL CHECK (status IN ('ok', 'parse_failed', 'transport_failed')),
    answer       VARCHAR,
    raw_text     VARCHAR,
    chunk_ids    VARCHAR[] NOT NULL,
    prompt_id    VARCHAR NOT NULL,
    prompt_hash  VARCHAR NOT NULL,
    cache_key    VARCHAR NOT NULL,
    error        VARCHAR,
    _partition   VARCHAR NOT NULL
);
