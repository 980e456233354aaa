-- Asset pool_completeness: recall of the main pool against all relevant chunks known from both rounds.
CREATE TABLE IF NOT EXISTS pool_completeness (
    scope                  VARCHAR NOT NULL,   -- all | a tier
    cut                    VARCHAR NOT NULL,   -- lenient | strict
    threshold              BIGINT NOT NULL,
    audit_queries          BIGINT NOT NULL,
    queries_with_relevant  BIGINT NOT NULL,
    relevant_known         BIGINT NOT NULL,
    relevant_in_main_pool  BIGINT NOT NULL,
    recall_micro           DOUBLE,
    recall_macro           DOUBLE
);
