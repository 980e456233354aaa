-- Reranker scores reused across runs, keyed by reranker setup and the (query text, chunk text) pair.
-- model_key: backend, model identity (folder content hash, hub id@commit, or endpoint + model) and every
-- setting that changes a score (max length, request format); see retrieval/_rerank.py.
CREATE TABLE IF NOT EXISTS rerank_cache (
    model_key    VARCHAR NOT NULL,
    query_sha256 VARCHAR NOT NULL,
    text_sha256  VARCHAR NOT NULL,
    score        DOUBLE NOT NULL,
    n_tokens     INTEGER            -- tokens of the query + chunk pair before truncation; NULL when unknown
);
-- No key: rows enter through an anti-join on (model_key, query_sha256, text_sha256) (retrieval/_rerank.py), far
-- cheaper than keeping an index on three long strings up to date while a run writes hundreds of thousands of rows.
