-- One row per upstream row of every mamabench pool after its adapter.
CREATE TABLE IF NOT EXISTS mamabench_adapted (
    pool              VARCHAR NOT NULL,
    origin            VARCHAR NOT NULL,
    upstream_index    BIGINT  NOT NULL,
    upstream_id       VARCHAR,
    item_id           VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,   -- kept | refused | out_of_scope | pending (awaits a scope verdict)
    reason            VARCHAR,            -- refusal reason
    detail            VARCHAR,
    in_prescope       BOOLEAN,            -- pre-scoped pools: the row matches the pool's scope rule
    cosmetic_defects  VARCHAR[] NOT NULL,
    scope_mode        VARCHAR,            -- mcq | open_ended
    scope_input       VARCHAR,            -- the item as the scope classifier reads it
    join_key          VARCHAR,            -- HealthBench prompt_id
    prior_category    VARCHAR,            -- label the row arrived with (Kenya vignettes)
    item_json         VARCHAR,            -- canonical item, category not yet set
    criteria_json     VARCHAR             -- rubric criteria [{criterion_id, criterion, tags}]
);
