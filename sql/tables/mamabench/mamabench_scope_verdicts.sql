-- One scope verdict per item awaiting one: from the classifier, or joined from oss_eval by prompt_id.
CREATE TABLE IF NOT EXISTS mamabench_scope_verdicts (
    item_id         VARCHAR NOT NULL,
    pool            VARCHAR NOT NULL,
    via             VARCHAR NOT NULL,   -- classifier | oss_eval_verdict
    status          VARCHAR NOT NULL,   -- ok | parse_failed | transport_failed | no_oss_eval_verdict | oss_eval_verdict_failed
    category        VARCHAR,
    rationale       VARCHAR,
    reasoning       VARCHAR,
    error           VARCHAR,
    from_cache      BOOLEAN,
    model           VARCHAR,
    endpoint        VARCHAR,
    prompt_id       VARCHAR,
    prompt_hash     VARCHAR,
    source_item_id  VARCHAR,            -- joined verdicts: the oss_eval item that carried it
    identity        VARCHAR             -- the classifier's identity: endpoint, model and decoding (LLMClient.identity)
);
