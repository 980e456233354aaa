-- Asset per_query_results: every (retriever, benchmark query, measure) value, once; 0 where nothing qualifies.
-- (No primary key: ~1M rows at release scale insert several times faster without the index.)
CREATE TABLE IF NOT EXISTS per_query_results (
    retriever             VARCHAR NOT NULL,
    query_id              VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    value                 DOUBLE NOT NULL
);
