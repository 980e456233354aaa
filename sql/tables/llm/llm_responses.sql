-- Content-addressed cache of LLM answers (one row per distinct request).
-- cache_key = sha256 over endpoint identity, model, template id + hash, rendered
-- messages, decoding parameters and response schema. Never holds an API key.
-- cache_key is unique without a PRIMARY KEY: the only writer (mama_pipeline.llm.answer_log.fold) deletes a key's
-- row and inserts its new one in one transaction. A key's index would be rewritten whole at every checkpoint,
-- seconds per write at millions of answers (store.duckdb_store.drop_primary_key rebuilds an older cache).
CREATE TABLE IF NOT EXISTS llm_responses (
    cache_key          VARCHAR NOT NULL,
    stage              VARCHAR NOT NULL,
    endpoint           VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    template_id        VARCHAR NOT NULL,
    template_hash      VARCHAR NOT NULL,
    schema_hash        VARCHAR NOT NULL,
    status             VARCHAR NOT NULL,   -- ok | parse_failed
    raw_text           VARCHAR,
    reasoning          VARCHAR,
    parsed_json        VARCHAR,
    error              VARCHAR,
    prompt_tokens      BIGINT,
    completion_tokens  BIGINT,
    cached_tokens      BIGINT,
    attempts           INTEGER NOT NULL,
    latency_s          DOUBLE,
    created_at         TIMESTAMP NOT NULL
);
