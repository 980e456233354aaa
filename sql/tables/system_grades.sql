-- Asset system_grades: one grade per (system, item), partition = system.
-- status: graded | answer_failed | grade_failed; score null unless graded (or answer_failures: score_zero).
-- mcq: correct/invalid (invalid = readable answer without a letter of the item, counted wrong);
-- short_answer: grade correct/partially_correct/incorrect -> 1/0.5/0;
-- rubric: HealthBench example score = achieved_points / possible_points (not clipped), criteria as JSON.
CREATE TABLE IF NOT EXISTS system_grades (
    system              VARCHAR NOT NULL,
    item_id             VARCHAR NOT NULL,
    track               VARCHAR NOT NULL,
    pool                VARCHAR NOT NULL,
    category            VARCHAR NOT NULL,
    status              VARCHAR NOT NULL CHECK (status IN ('graded', 'answer_failed', 'grade_failed')),
    score               DOUBLE,
    correct             BOOLEAN,
    invalid             BOOLEAN,
    grade               VARCHAR,
    achieved_points     DOUBLE,
    possible_points     DOUBLE,
    grader_reasoning    VARCHAR,
    criteria            VARCHAR,
    grader_prompt_hash  VARCHAR,
    error               VARCHAR,
    grader              VARCHAR,
    _partition          VARCHAR NOT NULL
);
