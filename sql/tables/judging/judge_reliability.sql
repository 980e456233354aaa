-- Asset judge_reliability: agreement of the judge with each reference judge on the pilot sample.
CREATE TABLE IF NOT EXISTS judge_reliability (
    reference_stage  VARCHAR NOT NULL,  -- reference_judge | cross_model_judge (llm.<stage>)
    audit            VARCHAR NOT NULL,  -- self_consistency (the judge's model again) | cross_model (another model)
    reference_model  VARCHAR NOT NULL,
    metric           VARCHAR NOT NULL,
    value            DOUBLE,            -- NULL when undefined (no pairs, or kappa of a one-level table)
    pairs            BIGINT NOT NULL,
    note             VARCHAR            -- set (and value NULL) when the figure is refused: the reference is the judge itself
);
