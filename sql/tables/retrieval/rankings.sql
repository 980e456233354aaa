-- Every retriever's top-k per query, one partition per retriever, in trec_eval order:
-- rank = position by score descending, then chunk_id descending.
CREATE TABLE IF NOT EXISTS rankings (
    query_id VARCHAR NOT NULL,
    retriever VARCHAR NOT NULL,
    rank INTEGER NOT NULL CHECK (rank >= 1),
    chunk_id VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    _partition VARCHAR NOT NULL
);
