-- Assets mamaretrieval_leaderboard / mamabench_leaderboard (_partition = benchmark): every value an entry's figures
-- come from (Judged@k too). part: public | held_out (release.held_out's rule; all public when it is off).
CREATE TABLE IF NOT EXISTS leaderboard_per_query (
    benchmark             VARCHAR NOT NULL,
    track                 VARCHAR NOT NULL,
    entry_id              VARCHAR NOT NULL,
    query_id              VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    value                 DOUBLE NOT NULL,
    part                  VARCHAR NOT NULL,
    _partition            VARCHAR NOT NULL
);
