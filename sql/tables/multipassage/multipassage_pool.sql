-- Asset multipassage_pool: the pooled retrievers' top-k per multi-passage question plus every chunk of its set.
CREATE TABLE IF NOT EXISTS multipassage_pool (
    query_id VARCHAR NOT NULL,
    chunk_id VARCHAR NOT NULL,
    retrievers VARCHAR[] NOT NULL,  -- sorted names of the retrievers whose top-k held the pair; empty: seed only
    best_rank INTEGER,              -- best rank among them; NULL for a seed-only pair
    is_seed BOOLEAN NOT NULL,       -- a chunk of the question's set
    pool_size INTEGER NOT NULL,     -- pairs of this query in the pool
    PRIMARY KEY (query_id, chunk_id)
);
