-- Asset sampled_chunks: seed chunks for query writing, ordered by source and bundle order.
CREATE TABLE IF NOT EXISTS sampled_chunks (
    chunk_id        VARCHAR NOT NULL PRIMARY KEY,
    source          VARCHAR NOT NULL,
    page            BIGINT NOT NULL,
    breadcrumb      VARCHAR[] NOT NULL,
    text            VARCHAR NOT NULL,
    given_cid       VARCHAR,
    line            BIGINT NOT NULL,
    ordinal         BIGINT NOT NULL,
    corpus_version  VARCHAR NOT NULL,
    tier            VARCHAR NOT NULL,
    section         VARCHAR NOT NULL  -- sampling stratum: breadcrumb level corpus.stratify_level
);
