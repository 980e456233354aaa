-- Asset scoreboard: mean of each measure per retriever over the benchmark queries (tier 'all', then per tier).
-- measure: ir_measures name (or wHR@k / wP@k); queries_no_relevant: queries of the tier without a qualifying chunk.
CREATE TABLE IF NOT EXISTS scoreboard (
    tier                  VARCHAR NOT NULL,
    retriever             VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    label                 VARCHAR NOT NULL,
    family                VARCHAR NOT NULL,
    cut                   VARCHAR NOT NULL,
    rel                   BIGINT,
    k                     BIGINT,
    position              BIGINT NOT NULL,
    mean                  DOUBLE NOT NULL,
    n_queries             BIGINT NOT NULL,
    queries_no_relevant   BIGINT,
    PRIMARY KEY (tier, retriever, measure)
);
