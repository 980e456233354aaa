-- Asset variant_labels: every variant's labels, inherited from its parent or judged as a hole.
CREATE TABLE IF NOT EXISTS variant_labels (
    variant_id     VARCHAR NOT NULL,
    parent_id      VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,
    chunk_id       VARCHAR NOT NULL,
    d1_topic       BOOLEAN NOT NULL,
    d2_meaningful  TINYINT,
    d3_actionable  TINYINT,
    d4_density     TINYINT,
    score          TINYINT NOT NULL,
    origin         VARCHAR NOT NULL,  -- inherited | hole
    judge_model    VARCHAR NOT NULL,
    prompt_hash    VARCHAR NOT NULL,
    PRIMARY KEY (variant_id, chunk_id)
);
