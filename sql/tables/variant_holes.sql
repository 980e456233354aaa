-- Asset variant_holes: (parent, chunk) pairs a variant's top-k surfaced without a label of the parent.
CREATE TABLE IF NOT EXISTS variant_holes (
    parent_id       VARCHAR NOT NULL,
    chunk_id        VARCHAR NOT NULL,
    best_rank       INTEGER NOT NULL,
    kinds           VARCHAR NOT NULL,  -- kinds whose rankings surfaced it
    retrievers      VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,  -- judged | reused | failed | over_budget
    failure_reason  VARCHAR,
    PRIMARY KEY (parent_id, chunk_id)
);
