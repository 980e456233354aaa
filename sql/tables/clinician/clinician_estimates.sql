-- Asset clinician_estimates: judge-only and prediction-powered P@k / wP@k per retriever, tier and measure.
-- judge_only: the scoreboard's figure (judge labels, unlabelled pairs 0). estimate, ci_low, ci_high (95%): NULL
-- when refused (status refused, reason says which rule). slots = queries x k; pairs: top-k pairs retrieved.
CREATE TABLE IF NOT EXISTS clinician_estimates (
    retriever   VARCHAR NOT NULL,
    tier        VARCHAR NOT NULL,   -- all | a query tier
    measure     VARCHAR NOT NULL,   -- the scoreboard's measure name, e.g. P(rel=3)@5, wP@5
    label       VARCHAR NOT NULL,   -- e.g. "P@5 lenient"
    k           BIGINT NOT NULL,
    queries     BIGINT NOT NULL,
    slots       BIGINT NOT NULL,
    pairs       BIGINT NOT NULL,
    judge_only  DOUBLE,
    design      VARCHAR NOT NULL,   -- uniform | none (no estimation sample)
    sampled     BIGINT NOT NULL,    -- estimation-sample pairs in the cell
    labelled    BIGINT NOT NULL,    -- of those, with a clinicians' majority label
    unresolved  BIGINT NOT NULL,    -- sampled - labelled (ties, too few annotations)
    tied        BIGINT NOT NULL,    -- of the unresolved: the annotators tied
    estimate    DOUBLE,             -- clipped to the measure's range like its interval: inside it
    ci_low      DOUBLE,
    ci_high     DOUBLE,
    estimate_ties_low  DOUBLE,      -- the estimate with each tied pair at its annotators' lowest score
    estimate_ties_high DOUBLE,      -- ... at their highest
    status      VARCHAR NOT NULL,   -- estimated | refused
    reason      VARCHAR,
    synthetic   BOOLEAN NOT NULL,   -- the labels are the offline demo's made-up annotators'
    circularity VARCHAR,            -- the judge shares its model (family) with this retriever or the query writer
    PRIMARY KEY (retriever, tier, measure)
);
