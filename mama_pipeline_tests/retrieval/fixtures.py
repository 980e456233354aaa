"""A tiny guideline-like corpus and queries for retrieval tests."""

import hashlib

import polars as pl

TEXTS = [
    "Give oxytocin 10 IU intramuscularly within one minute of birth to prevent postpartum haemorrhage.",
    "Magnesium sulphate is the drug of choice to prevent and treat eclampsia; the loading dose is 4 g IV.",
    "Good attachment at the breast: the chin touches the breast, the mouth is wide open, the lower lip turned out.",
    "Keep the newborn warm: dry the baby, use skin-to-skin contact and cover the head.",
    "Measure blood pressure at every antenatal visit; 140/90 mmHg or more is hypertension in pregnancy.",
    "Bleeding after birth that soaks more than one pad in five minutes is dangerous: call for help.",
    "Iron and folic acid tablets daily during pregnancy prevent anaemia.",
    "Postpartum haemorrhage is bleeding of 500 ml or more within 24 hours after birth.",
]
QUERIES = [
    ("q_00001", "oxytocin dose to prevent bleeding after birth", 0, "very_high"),
    ("q_00002", "treatment of eclampsia", 1, "very_high"),
    ("q_00003", "how to keep a newborn baby warm", 3, "high"),
    ("q_00004", "blood pressure threshold for hypertension in pregnancy", 4, "high"),
    ("q_00005", "anaemia prevention in pregnancy", 6, "moderate"),
]


def chunk_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunks_frame(texts=TEXTS, version: str = "v1") -> pl.DataFrame:
    """Shaped like the corpus area's ``corpus_chunks`` table."""
    n = len(texts)
    return pl.DataFrame(
        {
            "chunk_id": [chunk_id(t) for t in texts],
            "source": "sample-guideline",
            "page": list(range(1, n + 1)),
            "breadcrumb": [["Care"]] * n,
            "text": list(texts),
            "given_cid": None,
            "line": list(range(1, n + 1)),
            "ordinal": list(range(n)),
            "corpus_version": version,
        },
        schema_overrides={"given_cid": pl.String},
    )


def queries_frame() -> pl.DataFrame:
    """Shaped like the queries area's ``generated_queries`` table."""
    return with_query_provenance(
        pl.DataFrame(
            {
                "query_id": [q for q, *_ in QUERIES],
                "query_text": [t for _, t, *_ in QUERIES],
                "seed_chunk_id": [chunk_id(TEXTS[i]) for _, _, i, _ in QUERIES],
                "source": "sample-guideline",
                "tier": [tier for *_, tier in QUERIES],
            }
        )
    )


def with_query_provenance(queries: pl.DataFrame, version: str = "v1") -> pl.DataFrame:
    return queries.with_columns(
        model=pl.lit("fixture"),
        prompt_hash=pl.lit("0" * 16),
        temperature=pl.lit(0.0),
        reason=pl.lit(None, pl.String),
        corpus_version=pl.lit(version),
    )
