-- Asset multipassage_decisions: one decision per sampled set (question writing, then verification).
CREATE TABLE IF NOT EXISTS multipassage_decisions (
    set_id                VARCHAR NOT NULL PRIMARY KEY,
    kind                  VARCHAR NOT NULL,
    size                  BIGINT NOT NULL,
    chunk_ids             VARCHAR[] NOT NULL,
    source                VARCHAR NOT NULL,
    tier                  VARCHAR NOT NULL,
    status                VARCHAR NOT NULL,  -- kept | writer_failed | no_question | empty_question | too_long |
                                             -- facts_missing | verifier_failed | fact_not_stated |
                                             -- single_chunk_answers | set_incomplete | duplicate_question
    question              VARCHAR,
    raw_question          VARCHAR,
    words                 BIGINT,
    writer_reason         VARCHAR,
    facts                 VARCHAR[],         -- the facts a complete answer needs, passage by passage
    fact_chunk_ids        VARCHAR[],         -- the chunk each fact was taken from, in facts order
    fact_verdicts         VARCHAR[],         -- stated | not_stated per fact (the verifier, fact against its chunk)
    set_verdict           VARCHAR,           -- complete | partial | none (the set as a whole)
    alone_verdicts        VARCHAR[],         -- one per chunk, in chunk_ids order
    missing               VARCHAR,
    error                 VARCHAR,           -- client error when writer_failed / verifier_failed
    writer_model          VARCHAR NOT NULL,
    writer_prompt_hash    VARCHAR NOT NULL,
    verifier_model        VARCHAR NOT NULL,
    verifier_prompt_hash  VARCHAR NOT NULL,
    temperature           DOUBLE NOT NULL,
    corpus_version        VARCHAR NOT NULL
);
