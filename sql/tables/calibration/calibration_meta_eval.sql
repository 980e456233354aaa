-- HealthBench physician meta-evaluation rows, every upstream field as read
-- (2025-05-07-06-14-12_oss_meta_eval.jsonl); upstream_line is the 1-based line.
CREATE TABLE IF NOT EXISTS calibration_meta_eval (
    upstream_line             BIGINT PRIMARY KEY,
    prompt                    STRUCT(role VARCHAR, content VARCHAR)[] NOT NULL,
    completion                VARCHAR NOT NULL,
    rubric                    VARCHAR NOT NULL,
    category                  VARCHAR NOT NULL,  -- upstream consensus cluster, e.g. cluster:hedging_...
    binary_labels             BOOLEAN[] NOT NULL,  -- one per physician
    anonymized_physician_ids  VARCHAR[] NOT NULL,
    prompt_id                 VARCHAR NOT NULL,
    completion_id             VARCHAR NOT NULL,
    canary                    VARCHAR
);
