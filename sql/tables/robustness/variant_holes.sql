-- Asset variant_holes: (parent, chunk) pairs in the top-k of a variant or of the parent's clean ranking
-- (by a scored retriever) without a label of the parent.
CREATE TABLE IF NOT EXISTS variant_holes (
    parent_id       VARCHAR NOT NULL,
    chunk_id        VARCHAR NOT NULL,
    best_rank       INTEGER NOT NULL,
    sides           VARCHAR NOT NULL,  -- clean, variant or clean,variant: whose top-k held it
    kinds           VARCHAR NOT NULL,  -- kinds whose rankings surfaced it (empty: the clean ranking alone)
    retrievers      VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,  -- judged | reused | failed | over_budget
    failure_reason  VARCHAR,
    PRIMARY KEY (parent_id, chunk_id)
);
