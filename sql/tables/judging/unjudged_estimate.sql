-- Asset unjudged_estimate: the labels' estimated recall of the pool's relevant pairs (remainder sample).
CREATE TABLE IF NOT EXISTS unjudged_estimate (
    scope                          VARCHAR NOT NULL,   -- all | a tier
    cut                            VARCHAR NOT NULL,   -- lenient | strict
    threshold                      BIGINT NOT NULL,
    pooled_pairs                   BIGINT NOT NULL,
    labelled_pairs                 BIGINT NOT NULL,  -- chosen by the rounds or the sample, with a label
    unjudged_pairs                 BIGINT NOT NULL,    -- never asked
    failed_pairs                   BIGINT NOT NULL,    -- asked, no label
    sample_pairs                   BIGINT NOT NULL,    -- remainder sample pairs with a label
    sample_relevant                BIGINT NOT NULL,
    relevant_labelled              BIGINT NOT NULL,
    relevant_unlabelled_estimate   DOUBLE,
    recall                         DOUBLE,             -- of the labelled pairs; null when refused
    recall_low                     DOUBLE,
    recall_high                    DOUBLE,
    confidence                     DOUBLE NOT NULL,
    note                           VARCHAR              -- why the recall is refused
);
