-- Asset submission_scores (partition = submission_id): every (submission, track, query or item, measure) value.
-- track: main | robustness | multipassage (retrieval) or mcq | short_answer | rubric (answers); query_id is the
-- mamabench item id for answers. Retrieval measures are the configured retrievers' per-query measures plus Judged@k;
-- answers: measure 'score', the value the system scoreboard's mean uses (null where it leaves the item out).
CREATE TABLE IF NOT EXISTS submission_per_query (
    submission_id         VARCHAR NOT NULL,
    track                 VARCHAR NOT NULL,
    query_id              VARCHAR NOT NULL,
    measure               VARCHAR NOT NULL,
    value                 DOUBLE
);
