-- Asset sampling_rejections: chunks of tiered sources rejected as boilerplate.
CREATE TABLE IF NOT EXISTS sampling_rejections (
    chunk_id        VARCHAR NOT NULL PRIMARY KEY,
    source          VARCHAR NOT NULL,
    tier            VARCHAR NOT NULL,
    page            BIGINT NOT NULL,
    line            BIGINT NOT NULL,
    reason          VARCHAR NOT NULL,  -- front_matter | heading_* | empty_form_table | short_body
    excerpt         VARCHAR NOT NULL,
    corpus_version  VARCHAR NOT NULL
);
