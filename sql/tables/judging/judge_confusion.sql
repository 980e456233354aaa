-- Asset judge_confusion: per reference judge, pilot pairs by judge score (rows) and reference score (columns).
CREATE TABLE IF NOT EXISTS judge_confusion (
    reference_stage  VARCHAR NOT NULL,
    audit            VARCHAR NOT NULL,  -- self_consistency | cross_model
    reference_model  VARCHAR NOT NULL,
    main_score  BIGINT NOT NULL,
    ref_0 BIGINT NOT NULL, ref_1 BIGINT NOT NULL, ref_2 BIGINT NOT NULL, ref_3 BIGINT NOT NULL,
    ref_4 BIGINT NOT NULL, ref_5 BIGINT NOT NULL, ref_6 BIGINT NOT NULL
);
