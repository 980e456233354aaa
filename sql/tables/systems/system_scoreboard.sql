-- Asset system_scoreboard: per (system, track, segment) the mean and its bootstrap interval over scored items.
-- segment_kind: all | category | pool. Invalid answers (the system's own output that cannot be graded) score 0.
-- n_unanswered: transport failures; mean_answered leaves them out, mean_unanswered_as_0 counts them as 0, and
-- mean (with ci_*) is the one systems.answer_failures picks (exclude: mean_answered; score_zero: the other).
-- rubric mean: the mean of HealthBench example scores, not clipped (the values the comparisons use);
-- healthbench_score: that mean clipped to [0, 1]. refused: why the figures of an over-bound (system, track) are
-- null. interval_refused: why ci_* is null where mean is not (too few items, no spread: docs/statistics.md).
-- grader_*: the rubric grader's agreement with physicians (calibration harness, same scope category).
CREATE TABLE IF NOT EXISTS system_scoreboard (
    system                     VARCHAR NOT NULL,
    track                      VARCHAR NOT NULL,
    segment_kind               VARCHAR NOT NULL,
    segment                    VARCHAR NOT NULL,
    n_items                    BIGINT NOT NULL,
    n_scored                   BIGINT NOT NULL,
    n_unanswered               BIGINT NOT NULL,
    n_grade_failed             BIGINT NOT NULL,
    n_invalid                  BIGINT NOT NULL,
    mean                       DOUBLE,
    ci_low                     DOUBLE,
    ci_high                    DOUBLE,
    mean_answered              DOUBLE,
    mean_unanswered_as_0       DOUBLE,
    healthbench_score          DOUBLE,
    refused                    VARCHAR,
    interval_refused           VARCHAR,
    grader_rows                BIGINT,
    grader_macro_f1            DOUBLE,
    grader_balanced_accuracy   DOUBLE,
    grader_agree_on_met        DOUBLE,
    grader_agree_on_not_met    DOUBLE
);
