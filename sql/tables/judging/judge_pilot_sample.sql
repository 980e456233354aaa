-- Asset judge_pilot_sample: seeded pilot pairs stratified by tier and main-judge score band.
CREATE TABLE IF NOT EXISTS judge_pilot_sample (
    query_id  VARCHAR NOT NULL,
    chunk_id  VARCHAR NOT NULL,
    tier      VARCHAR,
    score     TINYINT NOT NULL,
    band      VARCHAR NOT NULL   -- zero | low | lenient | strict
);
