-- Asset system_comparisons: paired tests between two systems on the items scored for both.
-- comparison: systems | rag_vs_baseline (system_a = the RAG system); segment: ALL or a scope category.
-- diff = mean_a - mean_b with its paired bootstrap interval; Holm across each (track, segment) family;
-- exact McNemar (p_mcnemar) on mcq only; refused: why an interval or p is NULL (docs/statistics.md). A (system, track) over its failure bound is in no comparison.
CREATE TABLE IF NOT EXISTS system_comparisons (
    track                  VARCHAR NOT NULL,
    segment                VARCHAR NOT NULL,
    comparison             VARCHAR NOT NULL,
    system_a               VARCHAR NOT NULL,
    system_b               VARCHAR NOT NULL,
    measure                VARCHAR NOT NULL,
    n_queries              BIGINT NOT NULL,
    mean_a                 DOUBLE NOT NULL,
    mean_b                 DOUBLE NOT NULL,
    diff                   DOUBLE NOT NULL,
    ci_low                 DOUBLE,
    ci_high                DOUBLE,
    p_randomization        DOUBLE,
    p_randomization_holm   DOUBLE,
    only_a                 BIGINT,
    only_b                 BIGINT,
    p_mcnemar              DOUBLE,
    p_mcnemar_holm         DOUBLE,
    refused                VARCHAR
);
