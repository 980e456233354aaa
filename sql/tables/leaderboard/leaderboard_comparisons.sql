-- Assets mamaretrieval_leaderboard / mamabench_leaderboard (_partition = benchmark): every two entries of a track
-- (entry_a before entry_b in id order) per measure, on the queries (items) both have a value for (n_shared; no
-- test below 2). diff = mean_a - mean_b with its paired BCa bootstrap interval; p_randomization: paired
-- randomization test; p_mcnemar: exact McNemar on 0/1 measures; *_holm: Holm across every pair of the track and
-- measure (a descriptive matrix: the standings come from leaderboard.board_standings); refused: why a pair's
-- statistics were refused for their input. Public part only when release.held_out is active.
CREATE TABLE IF NOT EXISTS leaderboard_comparisons (
    benchmark             VARCHAR NOT NULL,
    track                 VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    entry_a               VARCHAR NOT NULL,
    entry_b               VARCHAR NOT NULL,
    n_shared              BIGINT NOT NULL,
    mean_a                DOUBLE,
    mean_b                DOUBLE,
    diff                  DOUBLE,
    ci_low                DOUBLE,
    ci_high               DOUBLE,
    p_randomization       DOUBLE,
    p_holm                DOUBLE,
    only_a                BIGINT,
    only_b                BIGINT,
    p_mcnemar             DOUBLE,
    p_mcnemar_holm        DOUBLE,
    refused               VARCHAR,
    _partition            VARCHAR NOT NULL,
    PRIMARY KEY (track, measure, entry_a, entry_b)
);
