-- Asset corpus_chunks: one row per chunk of the corpus bundle, in bundle order.
-- text is the canonical text (corpus.canonical_text); chunk_id = first 16 hex of sha256(text).
CREATE TABLE IF NOT EXISTS corpus_chunks (
    chunk_id        VARCHAR NOT NULL PRIMARY KEY,
    source          VARCHAR NOT NULL,
    page            BIGINT NOT NULL,
    breadcrumb      VARCHAR[] NOT NULL,  -- section levels, top level first
    text            VARCHAR NOT NULL,
    given_cid       VARCHAR,             -- CID from the bundle header (verified equal to chunk_id)
    line            BIGINT NOT NULL,     -- header line (txt, jsonl) or 1-based row (parquet)
    ordinal         BIGINT NOT NULL,     -- position among kept chunks
    corpus_version  VARCHAR NOT NULL
);
