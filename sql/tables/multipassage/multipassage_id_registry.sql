-- Stable multi-passage question ids: a chunk set keeps its mq_ id for good; numbers are never reused.
CREATE TABLE IF NOT EXISTS multipassage_id_registry (
    set_id    VARCHAR NOT NULL PRIMARY KEY,
    query_id  VARCHAR NOT NULL UNIQUE
);
