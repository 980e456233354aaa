-- Our scope label (a) and the reference classifier's (b) on the seeded agreement sample; null = failed call.
CREATE TABLE IF NOT EXISTS mamabench_agreement (
    item_id     VARCHAR NOT NULL,
    a           VARCHAR,
    b           VARCHAR,
    model_a     VARCHAR,
    model_b     VARCHAR,
    identity_a  VARCHAR,   -- each stage's identity: endpoint, model and decoding (LLMClient.identity)
    identity_b  VARCHAR,
    audit       VARCHAR,   -- self_consistency (the classifier's model again) | cross_model (another model)
    note        VARCHAR    -- why no agreement figure is given (equal identities: the classifier twice), else null
);
