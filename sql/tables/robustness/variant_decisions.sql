-- Asset variant_decisions: one decision per attempted (parent query, kind) of the robustness track.
CREATE TABLE IF NOT EXISTS variant_decisions (
    variant_id        VARCHAR NOT NULL PRIMARY KEY,  -- <parent query id>~<kind>
    parent_id         VARCHAR NOT NULL,
    kind              VARCHAR NOT NULL,
    method            VARCHAR NOT NULL,  -- shorthand | noise | shorthand+noise | llm:<style>
    status            VARCHAR NOT NULL,  -- kept | identical_to_parent | rewrite_failed | empty_rewrite | too_long | gate_failed | gate_rejected
    gate              VARCHAR,           -- passed | rejected | failed | null (not gated)
    variant_text      VARCHAR,
    reason            VARCHAR,           -- the gate's reason
    error             VARCHAR,           -- client error of a failed rewrite or gate answer
    seed              BIGINT,            -- noise seed, or the LLM stage's decoding seed
    recipe            VARCHAR,           -- edits drawn, abbreviations applied, or the rewrite prompt
    model             VARCHAR,
    prompt_hash       VARCHAR,
    gate_model        VARCHAR,
    gate_prompt_hash  VARCHAR
);
