-- Asset llm_plan: per LLM-calling asset and stage, what a run would send (nothing is sent to make it).
-- Null counts: the plan was not computed for the stage (note says why, e.g. inputs not yet built).
CREATE TABLE IF NOT EXISTS llm_plan (
    asset              VARCHAR NOT NULL,
    stage              VARCHAR NOT NULL,   -- llm.<stage>, or system:<name> for an answering system
    model              VARCHAR NOT NULL,
    requests           BIGINT,             -- requests the step makes (cache hits included)
    cached             BIGINT,             -- of them, answered in the cache
    to_send            BIGINT,             -- distinct requests not in the cache
    prompt_tokens      BIGINT,             -- prompt tokens of the requests to send
    tokens_counted_by  VARCHAR NOT NULL,   -- the tokenizer, or the estimate's rule
    max_tokens         BIGINT NOT NULL,    -- completion-token cap per request
    slots              BIGINT NOT NULL,    -- answered at once: concurrency x base URLs, or the embedded slots
    latency_s          DOUBLE,             -- seconds a request: recorded median, or --latency-s
    latency_from       VARCHAR NOT NULL,
    expected_s         DOUBLE,             -- ceil(to_send / slots) x latency_s
    over_budget        VARCHAR NOT NULL,   -- empty, or the budget breach
    note               VARCHAR NOT NULL,
    bound              BIGINT,             -- most requests, from the configuration and the raw inputs (null: see basis)
    bound_basis        VARCHAR NOT NULL,   -- how the bound was computed, or why it was not
    servers            BIGINT NOT NULL,    -- base URLs (the embedded server: 1)
    bound_s            DOUBLE,             -- time to send the bound: at --rate per server, or at latency_s
    bound_tokens       BIGINT,             -- most prompt tokens of those requests (null: see tokens basis)
    bound_tokens_basis VARCHAR NOT NULL,   -- how the token bound was computed, or why it was not
    PRIMARY KEY (asset, stage)
);
