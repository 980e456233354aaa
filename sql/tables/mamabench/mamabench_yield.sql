-- Per pool: upstream rows, their fates, and yield = kept / upstream rows (percent).
CREATE TABLE IF NOT EXISTS mamabench_yield (
    pool           VARCHAR NOT NULL,
    dataset        VARCHAR NOT NULL,
    track          VARCHAR NOT NULL,
    scoped_by      VARCHAR NOT NULL,
    upstream_rows  BIGINT  NOT NULL,
    kept           BIGINT  NOT NULL,
    refused        BIGINT  NOT NULL,
    out_of_scope   BIGINT  NOT NULL,
    unclassified   BIGINT  NOT NULL,
    yield_pct      DOUBLE
);
