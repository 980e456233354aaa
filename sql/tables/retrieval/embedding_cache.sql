-- Text embeddings reused across corpus versions, keyed by encoder setup and text hash.
-- model_key: model identity (folder content hash or hub id@commit, or endpoint + model),
-- role (query/document), prompt, max sequence length and normalisation; see retrieval/_embedding_cache.py.
CREATE TABLE IF NOT EXISTS embedding_cache (
    model_key VARCHAR NOT NULL,
    text_sha256 VARCHAR NOT NULL,
    n_tokens INTEGER,          -- tokens of prompt + text before truncation; NULL when the encoder cannot tell
    indices INTEGER[],         -- sparse vectors: the dimensions with non-zero weight; NULL for dense vectors
    vector FLOAT[] NOT NULL,   -- the dense vector, or the sparse weights matching indices
    PRIMARY KEY (model_key, text_sha256)
);
