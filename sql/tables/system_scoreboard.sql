-- Asset system_scoreboard: per (system, track, segment) the mean and its bootstrap interval over scored items.
-- segment_kind: all | category | pool. rubric mean: HealthBench score (mean clipped to [0, 1]);
-- grader_*: the rubric grader's agreement with physicians (calibration harness, same scope category).
CREATE TABLE IF NOT EXISTS system_scoreboard (
    system                     VARCHAR NOT NULL,
    track                      VARCHAR NOT NULL,
    segment_kind               VARCHAR NOT NULL,
    segment                    VARCHAR NOT NULL,
    n_items                    BIGINT NOT NULL,
    n_scored                   BIGINT NOT NULL,
    n_answer_failed            BIGINT NOT NULL,
    n_grade_failed             BIGINT NOT NULL,
    n_invalid                  BIGINT NOT NULL,
    mean                       DOUBLE,
    ci_low                     DOUBLE,
    ci_high                    DOUBLE,
    unclipped_mean             DOUBLE,
    grader_rows                BIGINT,
    grader_macro_f1            DOUBLE,
    grader_balanced_accuracy   DOUBLE,
    grader_agree_on_met        DOUBLE,
    grader_agree_on_not_met    DOUBLE
);
