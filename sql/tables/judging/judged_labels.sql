-- Asset judged_labels: every pooled pair of one query shard, labelled, failed or unjudged (partition = shard).
CREATE TABLE IF NOT EXISTS judged_labels (
    query_id              VARCHAR NOT NULL,
    chunk_id              VARCHAR NOT NULL,
    status                VARCHAR NOT NULL,   -- labelled | failed | unjudged (adaptive judging: never a label)
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
    _partition            VARCHAR NOT NULL
);
