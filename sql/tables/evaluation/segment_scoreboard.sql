-- Asset segment_scoreboard: each retriever's measures per segment of the mamaretrieval queries:
-- tier, source, query-length band, relevant-chunk-length band (evaluation/_segments.py); tested: paired tests ran.
CREATE TABLE IF NOT EXISTS segment_scoreboard (
    dimension      VARCHAR NOT NULL,
    segment        VARCHAR NOT NULL,
    segment_order  BIGINT NOT NULL,
    retriever      VARCHAR NOT NULL,
    measure        VARCHAR NOT NULL,
    label          VARCHAR NOT NULL,
    mean           DOUBLE NOT NULL,
    ci_low         DOUBLE,   -- bootstrap interval of the mean (queries resampled); null when refused
    ci_high        DOUBLE,
    ci_refused     VARCHAR,  -- why the interval is refused, else null
    n_queries      BIGINT NOT NULL,
    tested         BOOLEAN NOT NULL,
    PRIMARY KEY (dimension, segment, retriever, measure)
);
