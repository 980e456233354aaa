-- The fate of every upstream row: upstream == kept + refused + out_of_scope + unclassified per pool.
CREATE TABLE IF NOT EXISTS mamabench_accounting (
    pool              VARCHAR NOT NULL,
    origin            VARCHAR NOT NULL,
    upstream_index    BIGINT  NOT NULL,
    upstream_id       VARCHAR,
    item_id           VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,  -- kept | refused | out_of_scope | unclassified
    reason            VARCHAR,
    detail            VARCHAR,
    in_prescope       BOOLEAN,
    category          VARCHAR,
    cosmetic_defects  VARCHAR[] NOT NULL
);
