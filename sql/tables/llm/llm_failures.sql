-- Transport failures (HTTP errors, 429s, timeouts) after the client's retries.
-- Not final: the same request is sent again on the next run.
CREATE TABLE IF NOT EXISTS llm_failures (
    cache_key    VARCHAR NOT NULL,
    stage        VARCHAR NOT NULL,
    item_id      VARCHAR NOT NULL,
    error        VARCHAR NOT NULL,
    attempts     INTEGER NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
