-- Asset beir_significance: paired tests between the retrievers of each BEIR benchmark (columns as significance).
CREATE TABLE IF NOT EXISTS beir_significance (
    benchmark             VARCHAR NOT NULL,
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
    PRIMARY KEY (benchmark, measure, retriever_a, retriever_b)
);
