-- Asset segment_significance: paired tests between retrievers within each segment that has at least
-- evaluation.segments.min_queries queries (columns as significance; Holm across the pairs of a segment and measure).
CREATE TABLE IF NOT EXISTS segment_significance (
    dimension             VARCHAR NOT NULL,
    segment               VARCHAR NOT NULL,
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
    PRIMARY KEY (dimension, segment, measure, retriever_a, retriever_b)
);
