-- Asset clinician_tasks: the seeded sample sent to clinicians; data_json is the Label Studio task data
-- (ids, query and chunk or item; no LLM label). stratum: tier|band (relevance, agreement design), "uniform" (a
-- relevance pair of the estimation design only) or the classifier's category (scope).
CREATE TABLE IF NOT EXISTS clinician_tasks (
    task_key   VARCHAR NOT NULL PRIMARY KEY,   -- relevance:<query_id>:<chunk_id> | scope:<item_id>
    kind       VARCHAR NOT NULL,               -- relevance | scope
    stratum    VARCHAR NOT NULL,
    query_id   VARCHAR,
    chunk_id   VARCHAR,
    item_id    VARCHAR,
    pool       VARCHAR,
    data_json  VARCHAR NOT NULL,
    estimation_sample BOOLEAN NOT NULL    -- drawn by the uniform estimation design (clinician.estimation_sample_size)
);
