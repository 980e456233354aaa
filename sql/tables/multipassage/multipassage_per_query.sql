-- Asset multipassage_per_query: every (retriever, multi-passage question, measure) value; 0 where nothing qualifies.
-- (No primary key: ~1M rows at release scale insert several times faster without the index.)
CREATE TABLE IF NOT EXISTS multipassage_per_query (
    retriever             VARCHAR NOT NULL,
    query_id              VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    value                 DOUBLE NOT NULL
);
