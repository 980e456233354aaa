-- Asset judgments: one row per labelled pooled pair, gathered from every shard.
CREATE TABLE IF NOT EXISTS judgments (
    query_id              VARCHAR NOT NULL,
    chunk_id              VARCHAR NOT NULL,
    reused                BOOLEAN NOT NULL,
    judge_model           VARCHAR NOT NULL,
    judge_identity        VARCHAR,            -- endpoint + model + decoding (judgment_labels)
    prompt_hash           VARCHAR NOT NULL,
    d1_topic              BOOLEAN NOT NULL,
    d2_meaningful         TINYINT,
    d3_actionable         TINYINT,
    d4_density            TINYINT,
    d3_answered           TINYINT,
    structural_violation  BOOLEAN NOT NULL,
    score                 TINYINT NOT NULL,
    reasoning             VARCHAR,
    judge_endpoint        VARCHAR NOT NULL,
    corpus_version        VARCHAR,
    cache_key             VARCHAR NOT NULL,
    tier                  VARCHAR,
    PRIMARY KEY (query_id, chunk_id)
);
