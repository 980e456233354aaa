-- Asset variant_rankings: each registry retriever's top-k for every variant (query_id = variant id).
CREATE TABLE IF NOT EXISTS variant_rankings (
    query_id   VARCHAR NOT NULL,
    retriever  VARCHAR NOT NULL,
    rank       INTEGER NOT NULL,
    chunk_id   VARCHAR NOT NULL,
    score      DOUBLE NOT NULL,
    PRIMARY KEY (retriever, query_id, rank)
);
