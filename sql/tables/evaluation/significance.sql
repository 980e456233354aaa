-- Asset significance: one row per measure and pair of retrievers (a before b in name order).
-- diff = mean(a - b) over queries; ci_*: paired BCa bootstrap; p_randomization: paired permutation test;
-- only_a / only_b / p_mcnemar: exact McNemar on 0/1 measures (NULL otherwise); *_holm: Holm across pairs.
-- refused: why an interval or p of the row is NULL (too few queries, no spread: docs/statistics.md); NULL if none.
CREATE TABLE IF NOT EXISTS significance (
    measure               VARCHAR NOT NULL,
    retriever_a           VARCHAR NOT NULL,
    retriever_b           VARCHAR NOT NULL,
    n_queries             BIGINT NOT NULL,
    mean_a                DOUBLE NOT NULL,
    mean_b                DOUBLE NOT NULL,
    diff                  DOUBLE NOT NULL,
    ci_low                DOUBLE,
    ci_high               DOUBLE,
    p_randomization       DOUBLE,
    p_randomization_holm  DOUBLE,
    only_a                BIGINT,
    only_b                BIGINT,
    p_mcnemar             DOUBLE,
    p_mcnemar_holm        DOUBLE,
    refused               VARCHAR,
    PRIMARY KEY (measure, retriever_a, retriever_b)
);
