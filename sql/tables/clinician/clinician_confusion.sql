-- Asset clinician_confusion: counts of (LLM label, clinician label) per comparison (score 0-6 or category).
CREATE TABLE IF NOT EXISTS clinician_confusion (
    kind        VARCHAR NOT NULL,
    comparison  VARCHAR NOT NULL,
    llm         VARCHAR NOT NULL,
    clinician   VARCHAR NOT NULL,
    count       BIGINT NOT NULL
);
