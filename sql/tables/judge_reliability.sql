-- Asset judge_reliability: agreement of the judge with the reference judge on the pilot sample.
CREATE TABLE IF NOT EXISTS judge_reliability (
    metric  VARCHAR NOT NULL,
    value   DOUBLE,            -- NULL when undefined (no pairs, or kappa of a one-level table)
    pairs   BIGINT NOT NULL,
    note    VARCHAR            -- set (and value NULL) when the figure is refused, e.g. the reference is the judge itself
);
