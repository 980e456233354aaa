-- Judge calibration: the candidate judge and each physician (baseline) against
-- the physicians' labels, over all judged rows (ALL) and per scope category.
CREATE TABLE IF NOT EXISTS calibration_harness_report (
    rater                VARCHAR NOT NULL,  -- judge | physicians_pooled | physician:<id>
    rater_kind           VARCHAR NOT NULL CHECK (rater_kind IN ('judge', 'physician')),
    scope_category       VARCHAR NOT NULL,  -- ALL or a scope category
    "rows"               BIGINT NOT NULL,
    pairs                BIGINT NOT NULL,
    met_rate             DOUBLE,
    reference_met_rate   DOUBLE,
    met_pairs            BIGINT NOT NULL,
    agree_on_met         DOUBLE,
    not_met_pairs        BIGINT NOT NULL,
    agree_on_not_met     DOUBLE,
    consensus_rows       BIGINT NOT NULL,
    consensus_agreement  DOUBLE,
    macro_f1             DOUBLE,
    balanced_accuracy    DOUBLE,
    PRIMARY KEY (rater, scope_category)
);
