-- Asset beir_segment_scoreboard: per BEIR benchmark, each retriever's measures per segment (see segment_scoreboard).
CREATE TABLE IF NOT EXISTS beir_segment_scoreboard (
    benchmark      VARCHAR NOT NULL,
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
    PRIMARY KEY (benchmark, dimension, segment, retriever, measure)
);
