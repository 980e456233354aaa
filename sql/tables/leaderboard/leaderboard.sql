-- Assets mamaretrieval_leaderboard / mamabench_leaderboard (_partition = benchmark): one row per (track, measure,
-- entry). entry_id: configured/<retriever or system> | submission/<submission_id>. n: queries (items) with a value;
-- mean with its 95% BCa bootstrap interval over the values in query id order (ci_note: why there is none);
-- judged_*: Judged@k beside a retrieval measure (mean over judged_n).
-- standing (leaderboard.board_standings, a step-down range permutation test over the entries, units = queries or
-- the held-out rule's groups): best (the highest mean, first entry id among equals) | below best | tied with best
-- | not separable at this n (the step's smallest attainable p >= alpha) | not compared with best (fewer than 2
-- units shared) | refused (no figure; refused says why) | no values. p_vs_best: the step-down p that placed the
-- entry; standing_entries / standing_units / standing_resamples / p_floor: the test of the track and measure
-- (p_floor: the smallest p its first step can attain).
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
    ci_note               VARCHAR,
    judged_measure        VARCHAR,
    judged_n              BIGINT,
    judged_mean           DOUBLE,
    standing              VARCHAR NOT NULL,
    best_entry_id         VARCHAR,
    n_shared_with_best    BIGINT,
    p_vs_best             DOUBLE,
    standing_entries      BIGINT,
    standing_units        BIGINT,
    standing_resamples    BIGINT,
    p_floor               DOUBLE,
    refused               VARCHAR,
    n_held_out            BIGINT,
    mean_held_out         DOUBLE,
    gap                   DOUBLE,
    p_gap                 DOUBLE,
    gap_note              VARCHAR,
    _partition            VARCHAR NOT NULL,
    PRIMARY KEY (track, measure, entry_id)
);
