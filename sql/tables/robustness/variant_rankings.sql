-- Asset variant_rankings: each registry retriever's top-k for every variant (query_id = variant id), one partition
-- per retriever (empty for a retriever that ranks no variant), in trec_eval order.
CREATE TABLE IF NOT EXISTS variant_rankings (
    query_id   VARCHAR NOT NULL,
    retriever  VARCHAR NOT NULL,
    rank       INTEGER NOT NULL,
    chunk_id   VARCHAR NOT NULL,
    score      DOUBLE NOT NULL,
    _partition VARCHAR NOT NULL,
    PRIMARY KEY (retriever, query_id, rank)
);
