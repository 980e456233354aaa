-- Asset judge_reliability: agreement of the judge with the reference judge on the pilot sample.
CREATE TABLE IF NOT EXISTS judge_reliability (
    metric  VARCHAR NOT NULL,
    value   DOUBLE,            -- NULL when undefined (no pairs, or kappa of a one-level table)
    pairs   BIGINT NOT NULL
);
