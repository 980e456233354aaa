-- Queries a reranker could not score (endpoint errors, timeouts, malformed answers) in its latest run.
-- Such a query has no reranked ranking (never one from default scores); the next run asks again.
CREATE TABLE IF NOT EXISTS rerank_failures (
    retriever       VARCHAR NOT NULL,
    corpus_version  VARCHAR NOT NULL,
    query_id        VARCHAR NOT NULL,
    error           VARCHAR NOT NULL,
    PRIMARY KEY (retriever, corpus_version, query_id)
);
