-- Asset robustness_scoreboard: clean versus variant per tier, kind, retriever and measure.
CREATE TABLE IF NOT EXISTS robustness_scoreboard (
    tier             VARCHAR NOT NULL,  -- all, then each tier
    kind             VARCHAR NOT NULL,
    retriever        VARCHAR NOT NULL,
    measure          VARCHAR NOT NULL,  -- one of evaluation.significance_measures
    n_queries        BIGINT NOT NULL,
    clean_mean       DOUBLE NOT NULL,
    variant_mean     DOUBLE NOT NULL,
    "drop"           DOUBLE NOT NULL,   -- clean_mean - variant_mean
    ci_low           DOUBLE,            -- paired bootstrap (BCa) interval of the drop
    ci_high          DOUBLE,
    p_randomization  DOUBLE,            -- paired randomization test
    p_holm           DOUBLE,            -- Holm across (kind, retriever) of one tier and measure
    clean_judged     DOUBLE,            -- mean Judged@k of the clean rankings that are not empty (NULL: none)
    variant_judged   DOUBLE,            -- mean Judged@k of the variant rankings that are not empty (NULL: none)
    clean_ranked     BIGINT NOT NULL,   -- of the n_queries, those with a clean ranking (clean_judged's denominator)
    variant_ranked   BIGINT NOT NULL,   -- of the n_queries, those with a variant ranking
    coverage_differs BOOLEAN,           -- |clean_judged - variant_judged| > robustness.coverage_tolerance
    refused          VARCHAR,           -- why ci_* or p_randomization is NULL (docs/statistics.md); NULL if none
    PRIMARY KEY (tier, kind, retriever, measure)
);
