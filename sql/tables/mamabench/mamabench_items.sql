-- Kept mamabench items (canonical JSON) with their scope category (null: pre-scoped pool).
CREATE TABLE IF NOT EXISTS mamabench_items (
    item_id    VARCHAR NOT NULL,
    pool       VARCHAR NOT NULL,
    set_type   VARCHAR NOT NULL,
    category   VARCHAR,
    item_json  VARCHAR NOT NULL
);
