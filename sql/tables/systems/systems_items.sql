-- Asset systems_items: the mamabench items every answering system is asked (a seeded per-track sample, or all).
-- category: the scope verdict, PRESCOPED for pools scoped upstream; n_criteria: rubric criteria (0 otherwise).
CREATE TABLE IF NOT EXISTS systems_items (
    item_id     VARCHAR NOT NULL PRIMARY KEY,
    track       VARCHAR NOT NULL CHECK (track IN ('mcq', 'short_answer', 'rubric')),
    pool        VARCHAR NOT NULL,
    category    VARCHAR NOT NULL,
    item_json   VARCHAR NOT NULL,
    n_criteria  BIGINT NOT NULL
);
