-- Asset clinician_labels: one row per task and annotator (the latest annotation), from Label Studio.
CREATE TABLE IF NOT EXISTS clinician_labels (
    task_key              VARCHAR NOT NULL,
    kind                  VARCHAR NOT NULL,   -- relevance | scope
    ls_task_id            BIGINT,
    annotation_id         BIGINT,
    annotator_id          VARCHAR NOT NULL,   -- the Label Studio user id (completed_by)
    created_at            VARCHAR,
    updated_at            VARCHAR,
    lead_time_s           DOUBLE,
    query_id              VARCHAR,
    chunk_id              VARCHAR,
    item_id               VARCHAR,
    d1_topic              BOOLEAN,
    d2_meaningful         TINYINT,            -- NULL when d1_topic is false (as in judgments)
    d3_actionable         TINYINT,
    d4_density            TINYINT,
    d3_answered           TINYINT,
    structural_violation  BOOLEAN,
    score                 TINYINT,
    category              VARCHAR,
    status                VARCHAR NOT NULL,   -- labelled | skipped | invalid
    problem               VARCHAR,
    source                VARCHAR NOT NULL,   -- server project URL or export file
    synthetic             BOOLEAN NOT NULL,   -- made up, not a clinician: the annotation or its task says so
    PRIMARY KEY (task_key, annotator_id)
);
