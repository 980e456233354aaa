-- Written by the generated_queries asset: every query id ever issued, by seed chunk.
-- Ids are never reused or renumbered; delete the table to number afresh.
CREATE TABLE IF NOT EXISTS query_id_registry (
    seed_chunk_id  VARCHAR NOT NULL PRIMARY KEY,
    query_id       VARCHAR NOT NULL UNIQUE
);
