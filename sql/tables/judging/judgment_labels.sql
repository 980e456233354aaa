-- Every relevance label ever produced, one row per (pair, judge identity, prompt version).
-- Append-only: a pair labelled under a judge identity and prompt hash is never asked again.
-- (query_id, chunk_id, judge_identity, prompt_hash) is unique without a PRIMARY KEY: the only writer
-- (mama_pipeline.judging._label_store.insert_labels) inserts the keys the table lacks, in one transaction. A key's
-- index would be rewritten whole at every checkpoint, seconds per batch of labels at millions of labels.
-- judge_identity: endpoint identity + model + decoding parameters (as in the LLM cache key);
-- 'unrecorded' for labels stored before identities were recorded (kept, never reused).
-- Written directly by mama_pipeline.judging._label_store (not through the IO manager).
-- d2..d4 and d3_answered are NULL when d1_topic is false (scoring stops at the gate);
-- d3_actionable is capped to 0 when the answer broke the D3>=1 => D2>=1 rule.
CREATE TABLE IF NOT EXISTS judgment_labels (
    query_id              VARCHAR NOT NULL,
    chunk_id              VARCHAR NOT NULL,
    judge_model           VARCHAR NOT NULL,
    judge_identity        VARCHAR NOT NULL,   -- mama_pipeline.llm.client.stage_identity
    prompt_hash           VARCHAR NOT NULL,   -- template hash + answer schema
    d1_topic              BOOLEAN NOT NULL,
    d2_meaningful         TINYINT,
    d3_actionable         TINYINT,
    d4_density            TINYINT,
    d3_answered           TINYINT,
    structural_violation  BOOLEAN NOT NULL,
    score                 TINYINT NOT NULL,
    reasoning             VARCHAR,
    judge_endpoint        VARCHAR NOT NULL,
    corpus_version        VARCHAR,            -- corpus version the pair was first judged in
    cache_key             VARCHAR NOT NULL    -- the answer in llm_responses
);
