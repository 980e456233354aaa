-- Asset robustness_scoreboard: clean versus variant per tier, kind, retriever and measure.
CREATE TABLE IF NOT EXISTS robustness_scoreboard (
    tier             VARCHAR NOT NULL,  -- all, then each tier
    kind             VARCHAR NOT NULL,
    retriever        VARCHAR NOT NULL,
    measure          VARCHAR NOT NULL,
    tested           BOOLEAN NOT NULL,  -- false: Judged@k, reported without a test
    n_queries        BIGINT NOT NULL,
    clean_mean       DOUBLE NOT NULL,
    variant_mean     DOUBLE NOT NULL,
    "drop"           DOUBLE NOT NULL,   -- clean_mean - variant_mean
    ci_low           DOUBLE,            -- paired bootstrap (BCa) interval of the drop
    ci_high          DOUBLE,
    p_randomization  DOUBLE,            -- paired randomization test
    p_holm           DOUBLE,            -- Holm across (kind, retriever) of one tier and measure
    PRIMARY KEY (tier, kind, retriever, measure)
);
