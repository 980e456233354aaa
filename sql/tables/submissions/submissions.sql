-- Table submissions: one row per accepted submission; submission_id is the key of the dynamic partitions "submissions".
-- kind: retrieval (a TREC or BEIR-layout run on mamaretrieval) | answers (an answers file on mamabench).
-- files_json: [{"name": file name, "sha256": hex}]; judge_model / judge_prompt_sha256: what judged its holes or graded it.
CREATE TABLE IF NOT EXISTS submissions (
    submission_id         VARCHAR PRIMARY KEY,
    kind                  VARCHAR NOT NULL CHECK (kind IN ('retrieval', 'answers')),
    name                  VARCHAR NOT NULL,
    model                 VARCHAR,
    link                  VARCHAR,
    submitted_on          VARCHAR NOT NULL,
    files_json            VARCHAR NOT NULL,
    judge_model           VARCHAR,
    judge_prompt_sha256   VARCHAR,
    corpus_version        VARCHAR
);
