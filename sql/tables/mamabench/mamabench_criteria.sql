-- Rubric criterion text of kept items, keyed by a stable id (hash of text and tags).
CREATE TABLE IF NOT EXISTS mamabench_criteria (
    criterion_id  VARCHAR NOT NULL,
    criterion     VARCHAR NOT NULL,
    tags          VARCHAR[] NOT NULL
);
