-- Asset multipassage_candidates: every candidate chunk set of the multi-passage track, with its status.
CREATE TABLE IF NOT EXISTS multipassage_candidates (
    set_id           VARCHAR NOT NULL,   -- ms_ + sha256(sorted chunk ids)[:16]; repeated only by duplicate_set rows
    kind             VARCHAR NOT NULL,   -- section | cross_source
    size             BIGINT NOT NULL,    -- 2 or 3
    chunk_ids        VARCHAR[] NOT NULL, -- anchor first (section sets: bundle order)
    anchor_chunk_id  VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,   -- the anchor's source; its tier weights the sample
    tier             VARCHAR NOT NULL,
    sources          VARCHAR[] NOT NULL,  -- source of each chunk, in chunk_ids order
    section          VARCHAR,            -- shared section path (section sets)
    min_similarity   DOUBLE,             -- lowest partner cosine to the anchor (cross-source sets)
    status           VARCHAR NOT NULL,   -- sampled | not_sampled | dropped
    drop_reason      VARCHAR,            -- boilerplate:<rule> | no_other_source | below_similarity | duplicate_set
    corpus_version   VARCHAR NOT NULL
);
