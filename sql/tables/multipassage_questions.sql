-- Asset multipassage_questions: verified multi-passage questions (see multipassage_id_registry).
CREATE TABLE IF NOT EXISTS multipassage_questions (
    query_id              VARCHAR NOT NULL PRIMARY KEY,  -- mq_NNNNN
    query_text            VARCHAR NOT NULL,
    set_id                VARCHAR NOT NULL UNIQUE,
    chunk_ids             VARCHAR[] NOT NULL,            -- the required pieces (provenance and labels)
    kind                  VARCHAR NOT NULL,
    size                  BIGINT NOT NULL,
    source                VARCHAR NOT NULL,
    tier                  VARCHAR NOT NULL,
    writer_model          VARCHAR NOT NULL,
    writer_prompt_hash    VARCHAR NOT NULL,
    verifier_model        VARCHAR NOT NULL,
    verifier_prompt_hash  VARCHAR NOT NULL,
    temperature           DOUBLE NOT NULL,
    corpus_version        VARCHAR NOT NULL
);
