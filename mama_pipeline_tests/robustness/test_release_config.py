"""The robustness configuration of the mamaretrieval release: refusals and deterministic bytes."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest

from mama_pipeline.release._mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline.release._robustness_part import build_part
from mama_pipeline.release._verify import verify_release
from mama_pipeline.robustness._abbreviations import load_table
from mama_pipeline.robustness._variants import DECISION_SCHEMA, VARIANT_COLUMNS
from mama_pipeline.robustness.settings import RobustnessSettings
from mama_pipeline_tests.release import fixtures as fx


def tables(parent_text: str | None = None, chunk: str | None = None, prompt_hash: str = fx.JUDGE_HASH):
    q = fx.queries().sort("query_id").row(0, named=True)
    variants = pl.DataFrame(
        [
            {
                "variant_id": f"{q['query_id']}~shorthand",
                "parent_id": q["query_id"],
                "kind": "shorthand",
                "method": "shorthand",
                "query_text": "oxytocin dose PPH?",
                "parent_text": parent_text or q["query_text"],
                "tier": q["tier"],
                "source": q["source"],
                "seed": None,
                "recipe": "r",
                "gate": None,
                "model": None,
                "prompt_hash": None,
                "gate_model": None,
                "gate_prompt_hash": None,
            }
        ]
    ).select(VARIANT_COLUMNS)
    decisions = pl.DataFrame(
        [
            {
                **{c: None for c in DECISION_SCHEMA},
                "variant_id": variants["variant_id"][0],
                "parent_id": q["query_id"],
                "kind": "shorthand",
                "method": "shorthand",
                "status": "kept",
                "variant_text": "oxytocin dose PPH?",
            }
        ],
        schema=DECISION_SCHEMA,
    )
    labels = pl.DataFrame(
        [
            {
                "variant_id": variants["variant_id"][0],
                "parent_id": q["query_id"],
                "kind": "shorthand",
                "chunk_id": chunk or fx.IDS[0],
                "d1_topic": True,
                "d2_meaningful": 2,
                "d3_actionable": 2,
                "d4_density": 2,
                "score": 6,
                "origin": "hole",
                "judge_model": "judge-test",
                "prompt_hash": prompt_hash,
            }
        ]
    )
    rankings = pl.DataFrame(
        [{"query_id": variants["variant_id"][0], "retriever": "bm25", "rank": 1, "chunk_id": fx.IDS[0], "score": 1.0}]
    )
    return variants, decisions, labels, rankings


def part(**kw):
    return build_part(
        fx.inputs(), RobustnessSettings(), load_table(), *tables(**kw), {"robustness/prompts/x.txt": b"p"}
    )


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"parent_text": "an older wording"}, "made from an older text of their parent"),
        ({"chunk": "f" * 16}, "name a chunk outside the corpus version"),
        ({"prompt_hash": "0" * 16}, "come from a judge prompt other than the shipped one"),
    ],
)
def test_inconsistent_variants_are_refused(kw, message):
    with pytest.raises(ReleaseError, match=message):
        part(**kw)


def test_the_configuration_is_written_verified_and_byte_identical(tmp_path):
    hashes = []
    for name in ("a", "b"):
        folder = tmp_path / name
        manifest = write_mamaretrieval_release(folder, fx.inputs(), [part()])
        assert verify_release(folder).ok
        hashes.append(
            {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}
        )
    assert hashes[0] == hashes[1]
    assert "robustness/queries.parquet" in manifest["files"] and "robustness/abbreviations.tsv" in manifest["files"]
    kinds = {k["name"]: k for k in manifest["configurations"]["robustness"]["kinds"]}
    assert "reviewed table" in kinds["shorthand"]["how"] and "typo library" in kinds["typo"]["how"]
    assert kinds["shorthand"]["variants"] == 1 and kinds["shorthand"]["decisions"] == {"kept": 1}
    card = (tmp_path / "a" / "README.md").read_text()
    assert "config_name: robustness_judgments" in card and "| shorthand | clinical shorthand" in card
