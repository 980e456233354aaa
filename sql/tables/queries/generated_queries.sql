-- Asset generated_queries: kept queries with stable ids (see query_id_registry).
CREATE TABLE IF NOT EXISTS generated_queries (
    query_id        VARCHAR NOT NULL PRIMARY KEY,
    query_text      VARCHAR NOT NULL,
    seed_chunk_id   VARCHAR NOT NULL UNIQUE,  -- provenance, not a relevance label
    source          VARCHAR NOT NULL,
    tier            VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    prompt_hash     VARCHAR NOT NULL,
    temperature     DOUBLE NOT NULL,
    reason          VARCHAR,
    corpus_version  VARCHAR NOT NULL
);
