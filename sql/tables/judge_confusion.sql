-- Asset judge_confusion: pilot pairs by judge score (rows) and reference judge score (columns).
CREATE TABLE IF NOT EXISTS judge_confusion (
    main_score  BIGINT NOT NULL,
    ref_0 BIGINT NOT NULL, ref_1 BIGINT NOT NULL, ref_2 BIGINT NOT NULL, ref_3 BIGINT NOT NULL,
    ref_4 BIGINT NOT NULL, ref_5 BIGINT NOT NULL, ref_6 BIGINT NOT NULL
);
