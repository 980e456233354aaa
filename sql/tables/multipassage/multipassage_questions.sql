-- Asset multipassage_questions: verified multi-passage questions (see multipassage_id_registry).
CREATE TABLE IF NOT EXISTS multipassage_questions (
    query_id              VARCHAR NOT NULL PRIMARY KEY,  -- mq_NNNNN
    query_text            VARCHAR NOT NULL,
    set_id                VARCHAR NOT NULL UNIQUE,
    chunk_ids             VARCHAR[] NOT NULL,            -- the set (provenance; relevant for the headline measures)
    facts                 VARCHAR[] NOT NULL,            -- the facts a complete answer needs (the track's subtopics)
    fact_chunk_ids        VARCHAR[] NOT NULL,            -- the chunk of the set each fact was taken from
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
