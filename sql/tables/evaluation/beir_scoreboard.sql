-- Asset beir_scoreboard: per configured BEIR benchmark, the scoreboard of its retrievers (relevant: label >= 1).
CREATE TABLE IF NOT EXISTS beir_scoreboard (
    benchmark             VARCHAR NOT NULL,
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
    PRIMARY KEY (benchmark, tier, retriever, measure)
);
