-- Asset multipassage_scoreboard: mean of each measure per retriever over the verified questions (tier 'all', then
-- per tier). track: the track's measures (alpha_nDCG@k, R@k[pieces], AllIn@k[pieces]); else single-chunk headline.
CREATE TABLE IF NOT EXISTS multipassage_scoreboard (
    tier       VARCHAR NOT NULL,
    retriever  VARCHAR NOT NULL,
    measure    VARCHAR NOT NULL,
    position   BIGINT NOT NULL,
    track      BOOLEAN NOT NULL,
    mean       DOUBLE NOT NULL,
    n_queries  BIGINT NOT NULL,
    PRIMARY KEY (tier, retriever, measure)
);
