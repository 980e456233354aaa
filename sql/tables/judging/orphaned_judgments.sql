-- Asset orphaned_judgments: stored labels of the current judge and prompt whose chunk left the corpus.
CREATE TABLE IF NOT EXISTS orphaned_judgments (
    query_id        VARCHAR NOT NULL,
    chunk_id        VARCHAR NOT NULL,
    corpus_version  VARCHAR,   -- corpus version the label was made in
    score           TINYINT NOT NULL
);
