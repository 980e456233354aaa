-- Judge-calibration side-file: meta-evaluation rows whose prompt_id is in scope,
-- every upstream field kept, the mamabench scope category added.
CREATE TABLE IF NOT EXISTS calibration_side_file (
    upstream_line             BIGINT PRIMARY KEY,
    prompt                    STRUCT(role VARCHAR, content VARCHAR)[] NOT NULL,
    completion                VARCHAR NOT NULL,
    rubric                    VARCHAR NOT NULL,
    category                  VARCHAR NOT NULL,
    binary_labels             BOOLEAN[] NOT NULL,
    anonymized_physician_ids  VARCHAR[] NOT NULL,
    prompt_id                 VARCHAR NOT NULL,
    completion_id             VARCHAR NOT NULL,
    canary                    VARCHAR,
    scope_category            VARCHAR NOT NULL
        CHECK (scope_category IN ('MATERNAL', 'NEONATAL', 'CHILD_HEALTH', 'SEXUAL_AND_REPRODUCTIVE_HEALTH'))
);
