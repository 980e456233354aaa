-- Asset system_grades: one grade per (system, item), partition = system.
-- status: graded | answer_failed (unanswered: a transport failure) | grade_failed; score null unless graded (or
-- answer_failed under answer_failures: score_zero). invalid: the system's own output could not be graded (broken
-- JSON, empty, cut at max_tokens, no valid letter): graded, score 0, grade 'invalid', in every track;
-- mcq: correct;
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
