-- Asset submission_scores: per (submission, track) the counts behind its figures and why a track is refused.
CREATE TABLE IF NOT EXISTS submission_tracks (
    submission_id         VARCHAR NOT NULL,
    track                 VARCHAR NOT NULL,
    n_items               BIGINT NOT NULL,
    n_scored              BIGINT NOT NULL,
    n_unanswered          BIGINT NOT NULL,
    n_invalid             BIGINT NOT NULL,
    n_grade_failed        BIGINT NOT NULL,
    n_holes_judged        BIGINT NOT NULL,
    refused               VARCHAR,
    PRIMARY KEY (submission_id, track)
);
