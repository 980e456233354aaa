-- What happened to every meta-evaluation row: kept (per scope category),
-- out_of_scope, unclassified (verdict with null category), no_verdict.
CREATE TABLE IF NOT EXISTS calibration_side_file_accounting (
    outcome         VARCHAR NOT NULL CHECK (outcome IN ('kept', 'out_of_scope', 'unclassified', 'no_verdict')),
    scope_category  VARCHAR,  -- set for kept rows only
    "rows"          BIGINT NOT NULL,
    prompts         BIGINT NOT NULL
);
