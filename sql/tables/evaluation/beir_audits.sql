-- Asset beir_audits: leak audit (queries verbatim in a gold document; retriever NULL) and truncation audit
-- (documents longer than an encoder retriever's max sequence length, in its tokenizer's tokens), one figure a row.
CREATE TABLE IF NOT EXISTS beir_audits (
    benchmark             VARCHAR NOT NULL,
    audit                 VARCHAR NOT NULL,   -- leak | truncation
    retriever             VARCHAR,
    model                 VARCHAR,
    figure                VARCHAR NOT NULL,
    value                 DOUBLE NOT NULL
);
