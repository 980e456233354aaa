-- Asset robustness_per_query: per retriever, parent, kind and measure, the clean and the variant value.
-- (No primary key: millions of rows at ten times the paper insert several times faster without the index.)
CREATE TABLE IF NOT EXISTS robustness_per_query (
    retriever  VARCHAR NOT NULL,
    parent_id  VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,
    measure    VARCHAR NOT NULL,  -- a significance measure, or Judged@k (judge depth, every evaluation cutoff)
    clean      DOUBLE,            -- NULL: Judged@k of an empty clean ranking
    variant    DOUBLE             -- NULL: Judged@k of an empty variant ranking
);
