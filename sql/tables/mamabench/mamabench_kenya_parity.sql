-- The label each Kenya vignette arrived with (a) and our scope verdict (b; null = unclassified).
CREATE TABLE IF NOT EXISTS mamabench_kenya_parity (
    item_id  VARCHAR NOT NULL,
    a        VARCHAR,
    b        VARCHAR
);
