-- Asset reference_judgments: each reference judge on the pilot sample, labelled or failed.
CREATE TABLE IF NOT EXISTS reference_judgments (
    query_id              VARCHAR NOT NULL,
    chunk_id              VARCHAR NOT NULL,
    status                VARCHAR NOT NULL,   -- labelled | failed
    failure_reason        VARCHAR,            -- set when failed: client status and error, or a missing input
    reused                BOOLEAN NOT NULL,   -- label taken from judgment_labels, not asked in this run
    judge_model           VARCHAR,
    judge_identity        VARCHAR,
    prompt_hash           VARCHAR,            -- template hash + answer schema
    d1_topic              BOOLEAN,
    d2_meaningful         TINYINT,            -- NULL when d1_topic is false
    d3_actionable         TINYINT,            -- capped to 0 when the answer broke D3>=1 => D2>=1
    d4_density            TINYINT,
    d3_answered           TINYINT,
    structural_violation  BOOLEAN,
    score                 TINYINT,            -- D1 x (D2 + D3 + D4), computed in code
    reasoning             VARCHAR,
    judge_endpoint        VARCHAR,
    corpus_version        VARCHAR,
    cache_key             VARCHAR,
    tier                  VARCHAR,
    reference_stage       VARCHAR NOT NULL,   -- reference_judge | cross_model_judge (llm.<stage>)
    reference_model       VARCHAR NOT NULL    -- the model that stage asked
);
