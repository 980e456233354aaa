-- Asset clinician_validated: tasks with >= clinician.min_annotations usable annotations, majority label;
-- ties listed (tie true, tied_on the dimensions) with NULL labels.
CREATE TABLE IF NOT EXISTS clinician_validated (
    task_key       VARCHAR NOT NULL PRIMARY KEY,
    kind           VARCHAR NOT NULL,
    query_id       VARCHAR,
    chunk_id       VARCHAR,
    item_id        VARCHAR,
    annotations    BIGINT NOT NULL,
    annotators     VARCHAR NOT NULL,
    tie            BOOLEAN NOT NULL,
    tied_on        VARCHAR,
    d1_topic       BOOLEAN,
    d2_meaningful  TINYINT,
    d3_actionable  TINYINT,
    d4_density     TINYINT,
    score          TINYINT,
    category       VARCHAR,
    synthetic      BOOLEAN NOT NULL   -- adjudicated from any synthetic annotation
);
