-- The candidate rubric judge's answer for each sampled side-file row. Failed
-- calls stay listed with their status and error and a null criteria_met.
CREATE TABLE IF NOT EXISTS calibration_judge_labels (
    upstream_line   BIGINT PRIMARY KEY,
    prompt_id       VARCHAR NOT NULL,
    completion_id   VARCHAR NOT NULL,
    scope_category  VARCHAR NOT NULL,
    status          VARCHAR NOT NULL CHECK (status IN ('ok', 'parse_failed', 'transport_failed')),
    criteria_met    BOOLEAN CHECK ((status = 'ok') = (criteria_met IS NOT NULL)),
    explanation     VARCHAR,
    error           VARCHAR
);
