-- The judging pool: union of the pooled retrievers' top-k per query, plus the seed chunk when configured.
CREATE TABLE IF NOT EXISTS pooled_pairs (
    query_id VARCHAR NOT NULL,
    chunk_id VARCHAR NOT NULL,
    retrievers VARCHAR[] NOT NULL,  -- sorted names of the retrievers whose top-k held the pair; empty: seed only
    best_rank INTEGER,              -- best rank among them; NULL for a seed-only pair
    is_seed BOOLEAN NOT NULL,       -- the chunk the query was written from
    pool_size INTEGER NOT NULL,     -- pairs of this query in the pool
    PRIMARY KEY (query_id, chunk_id)
);
