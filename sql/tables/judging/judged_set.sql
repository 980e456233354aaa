-- Asset judged_set: the pooled pairs adaptive judging asked, in its order (empty under judging.strategy full).
CREATE TABLE IF NOT EXISTS judged_set (
    query_id   VARCHAR NOT NULL,
    chunk_id   VARCHAR NOT NULL,
    role       VARCHAR NOT NULL,   -- round (chosen by the method) | sample (uniform remainder sample)
    round      BIGINT NOT NULL,    -- the round that chose it; the sample is the last
    position   BIGINT NOT NULL,    -- place in the judging order
    status     VARCHAR,            -- labelled | failed, when judged_set asked it
    PRIMARY KEY (query_id, chunk_id)
);
