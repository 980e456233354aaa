-- Asset clinician_agreement: LLM judges against each clinician ("annotator <id>") and the majority;
-- Krippendorff's alpha between clinicians (comparison "annotators"). value NULL: undefined.
CREATE TABLE IF NOT EXISTS clinician_agreement (
    kind        VARCHAR NOT NULL,   -- relevance | scope
    comparison  VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    value       DOUBLE,
    pairs       BIGINT NOT NULL,
    PRIMARY KEY (kind, comparison, metric)
);
