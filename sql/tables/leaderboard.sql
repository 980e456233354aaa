-- Assets mamaretrieval_leaderboard / mamabench_leaderboard (_partition = benchmark): one row per (track, measure,
-- entry). entry_id: configured/<retriever or system> | submission/<submission_id>. n: queries (items) with a value;
-- mean with its 95% BCa bootstrap interval; judged_*: Judged@k beside a retrieval measure (mean over judged_n).
-- standing: best (the highest mean; every entry sharing it) | tied with best (Holm-adjusted paired randomization
-- p >= alpha against the best on the shared queries, Holm across every pair of the track and measure) | below best
-- | not compared with best (fewer than 2 shared) | refused (no figure; refused says why) | no values.
-- position: display order (mean, then entry id).
-- With release.held_out active every figure is of the public part; *_held_out, gap (public - held out) and p_gap
-- (unpaired permutation test) stand beside it.
CREATE TABLE IF NOT EXISTS leaderboard (
    benchmark             VARCHAR NOT NULL,
    track                 VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    measure_position      BIGINT NOT NULL,
    headline              BOOLEAN NOT NULL,
    entry_id              VARCHAR NOT NULL,
    source                VARCHAR NOT NULL,
    name                  VARCHAR NOT NULL,
    position              BIGINT NOT NULL,
    n                     BIGINT NOT NULL,
    mean                  DOUBLE,
    ci_low                DOUBLE,
    ci_high               DOUBLE,
    judged_measure        VARCHAR,
    judged_n              BIGINT,
    judged_mean           DOUBLE,
    standing              VARCHAR NOT NULL,
    best_entry_id         VARCHAR,
    n_shared_with_best    BIGINT,
    p_holm_vs_best        DOUBLE,
    refused               VARCHAR,
    n_held_out            BIGINT,
    mean_held_out         DOUBLE,
    gap                   DOUBLE,
    p_gap                 DOUBLE,
    gap_note              VARCHAR,
    _partition            VARCHAR NOT NULL,
    PRIMARY KEY (track, measure, entry_id)
);
