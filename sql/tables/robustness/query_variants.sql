-- Asset query_variants: the kept variants of the released queries (robustness track).
CREATE TABLE IF NOT EXISTS query_variants (
    variant_id        VARCHAR NOT NULL PRIMARY KEY,  -- <parent query id>~<kind>
    parent_id         VARCHAR NOT NULL,
    kind              VARCHAR NOT NULL,
    method            VARCHAR NOT NULL,
    query_text        VARCHAR NOT NULL,
    parent_text       VARCHAR NOT NULL,
    tier              VARCHAR NOT NULL,
    source            VARCHAR NOT NULL,
    seed              BIGINT,
    recipe            VARCHAR,
    gate              VARCHAR,
    model             VARCHAR,
    prompt_hash       VARCHAR,
    gate_model        VARCHAR,
    gate_prompt_hash  VARCHAR
);
