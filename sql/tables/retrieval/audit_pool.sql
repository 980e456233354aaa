-- The wider completeness-audit pool on a tier-stratified query sample.
CREATE TABLE IF NOT EXISTS audit_pool (
    query_id VARCHAR NOT NULL,
    chunk_id VARCHAR NOT NULL,
    retrievers VARCHAR[] NOT NULL,
    best_rank INTEGER,
    is_seed BOOLEAN NOT NULL,
    pool_size INTEGER NOT NULL,     -- pairs of this query in the audit pool
    in_main_pool BOOLEAN NOT NULL,  -- already in pooled_pairs
    PRIMARY KEY (query_id, chunk_id)
);
