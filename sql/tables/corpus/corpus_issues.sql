-- Asset corpus_issues: bundle chunks skipped as bad input (on_bad_chunk: skip), dropped as
-- duplicate ids, or reported as duplicate texts.
CREATE TABLE IF NOT EXISTS corpus_issues (
    file       VARCHAR NOT NULL,
    line       BIGINT NOT NULL,
    source     VARCHAR,
    page       BIGINT,
    chunk_id   VARCHAR,
    given_cid  VARCHAR,
    reason     VARCHAR NOT NULL,  -- malformed_header | bad_page | empty_chunk | non_utf8 | cid_mismatch | bad_record | duplicate_id | duplicate_text
    action     VARCHAR NOT NULL,  -- skipped | dropped | reported
    detail     VARCHAR NOT NULL
);
