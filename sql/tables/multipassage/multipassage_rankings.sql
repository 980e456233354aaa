-- Asset multipassage_rankings: every retriever's top-k per multi-passage question (partition = retriever),
-- in trec_eval order: rank = position by score descending, then chunk_id descending.
CREATE TABLE IF NOT EXISTS multipassage_rankings (
    query_id VARCHAR NOT NULL,
    retriever VARCHAR NOT NULL,
    rank INTEGER NOT NULL CHECK (rank >= 1),
    chunk_id VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    _partition VARCHAR NOT NULL
);
