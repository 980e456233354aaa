-- Asset multipassage_pool: the pooled retrievers' top-k per multi-passage question plus every required piece.
CREATE TABLE IF NOT EXISTS multipassage_pool (
    query_id VARCHAR NOT NULL,
    chunk_id VARCHAR NOT NULL,
    retrievers VARCHAR[] NOT NULL,  -- sorted names of the retrievers whose top-k held the pair; empty: seed only
    best_rank INTEGER,              -- best rank among them; NULL for a seed-only pair
    is_seed BOOLEAN NOT NULL,       -- a required piece of the question
    pool_size INTEGER NOT NULL,     -- pairs of this query in the pool
    PRIMARY KEY (query_id, chunk_id)
);
