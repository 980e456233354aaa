"""The mamaretrieval scoreboard on the public and the held-out queries, as an asset."""

from __future__ import annotations

import hashlib

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.evaluation.held_out_assets import held_out_scoreboard
from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

SALT = "eval-split"
LABELS = {  # the paper's labels of the default significance measures (lenient 3, strict 5)
    "Success(rel=3)@5": "HR@5 lenient",
    "Success(rel=5)@5": "HR@5 strict",
    "RR(rel=3)": "MRR lenient",
    "nDCG@10": "nDCG@10",
    "wP@5": "wP@5",
}


def _held(q: str) -> bool:
    return int(hashlib.sha256(f"{SALT}:{q}".encode()).hexdigest()[:16], 16) / 16**16 < 0.4


QUERIES = [f"q_{i:05d}" for i in range(1, 11)]
# bm25 finds the answer on odd-numbered queries, dense on every query; "P@3" is not a tested measure
VALUES = [
    (r, q, m, v)
    for q in QUERIES
    for r, v in (("bm25", float(int(q[-1]) % 2)), ("dense", 1.0))
    for m in ("RR(rel=3)", "P@3")
]


def test_public_and_held_out_side_by_side_per_retriever(tmp_path):
    cfg = {
        "data_dir": str(tmp_path / "data"),
        "release": {"held_out": {"share": 0.4, "salt": SALT}},
        "evaluation": {"significance_measures": ["RR(rel=3)"], "resamples": 200},
    }
    (tmp_path / "c.yaml").write_text(with_embedded(yaml.safe_dump(cfg)))

    @dg.asset(key="per_query_results")
    def stub() -> pl.DataFrame:
        return pl.DataFrame(VALUES, schema=["retriever", "query_id", "measure", "value"], orient="row")

    with dg.instance_for_test() as instance:
        dg.materialize(
            [stub, held_out_scoreboard],
            resources=shared_resources(str(tmp_path / "c.yaml")),
            instance=instance,
            raise_on_error=True,
        )
    board = Store(tmp_path / "data" / "mama.duckdb").read_table("held_out_scoreboard").sort("retriever")
    held = [q for q in QUERIES if _held(q)]
    public = [q for q in QUERIES if not _held(q)]
    assert len(held) >= 2 and len(public) >= 2
    assert board["measure"].to_list() == ["RR(rel=3)", "RR(rel=3)"]
    bm25, dense = board.rows(named=True)

    def odd_share(qs: list[str]) -> float:
        return sum(int(q[-1]) % 2 for q in qs) / len(qs)

    assert (bm25["n_public"], bm25["n_held_out"]) == (len(public), len(held))
    assert bm25["mean_public"] == pytest.approx(odd_share(public))
    assert bm25["mean_held_out"] == pytest.approx(odd_share(held))
    assert bm25["gap"] == pytest.approx(odd_share(public) - odd_share(held))
    # dense scores 1 everywhere: no gap, and every permutation gives the same difference, so p = 1
    assert (dense["gap"], dense["p_permutation"]) == (0.0, 1.0)


def test_the_evaluation_report_shows_both_parts_with_n_gap_and_test_when_the_rule_is_on(tmp_path, monkeypatch):
    from mama_pipeline_tests.evaluation.test_assets import (
        _config,
        _inputs,
        _materialize,
    )

    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    queries, rankings, judgments = _inputs()
    store = Store(tmp_path / "data" / "mama.duckdb")
    for name in ("alpha", "beta"):
        store.write_table("rankings", rankings.filter(pl.col("retriever") == name), partition=name)
    cfg = _config(tmp_path)
    raw = yaml.safe_load(cfg.read_text())
    raw["release"] = {"held_out": {"share": 0.4, "salt": SALT}}
    cfg.write_text(with_embedded(yaml.safe_dump(raw)))
    _materialize(
        cfg,
        queries,
        judgments,
        dg.AssetSelection.assets(
            "generated_queries",
            "corpus_chunks",
            "judgments",
            "scoreboard",
            "per_query_results",
            "significance",
            "evaluation_report",
            "segment_scoreboard",
            "segment_significance",
            "held_out_scoreboard",
        ),
    )
    page = (tmp_path / "data" / "reports" / "evaluation" / "scoreboard.html").read_text()
    section = page.split("<h2>Public and held-out parts</h2>")[1].split("<h2>")[0]
    assert "share 0.4" in section and f"<code>{SALT}</code>" in section and "independent samples" in section
    assert "cannot be paired" in section  # why this test, stated
    # the section's rows are the held_out_scoreboard's, each with both parts' n (queries 1..30 by the hash)
    held = [q for q in (f"q_{i:05d}" for i in range(1, 31)) if _held(q)]
    board = store.read_table("held_out_scoreboard")
    assert set(board["n_held_out"]) == {len(held)} and set(board["n_public"]) == {30 - len(held)}
    for r in board.iter_rows(named=True):
        cells = (
            f"<td>{r['retriever']}</td><td>{LABELS[r['measure']]}</td><td>{r['mean_public']:.3f}</td>"
            f"<td>{r['n_public']}</td><td>{r['mean_held_out']:.3f}</td><td>{r['n_held_out']}</td>"
            f"<td>{r['groups_public']}</td><td>{r['groups_held_out']}</td>"
            f"<td>{r['gap']:.3f}</td><td>{r['p_permutation']:.3f}</td><td>{r['relative_gap']:.3f}</td>"
            f"<td>{r['p_relative']:.3f}</td>"
        )
        assert cells in section, cells
    # two retrievers on the same queries: each one's relative gap is the other's, negated
    for m in board["measure"].unique().to_list():
        alpha, beta = board.filter(pl.col("measure") == m).sort("retriever").rows(named=True)
        assert alpha["relative_gap"] == pytest.approx(-beta["relative_gap"])
    assert board.height == 2 * 5  # two retrievers x the five tested measures
    # without a held-out share the report has no such section
    raw["release"] = {"held_out": {"share": 0.0}}
    cfg.write_text(with_embedded(yaml.safe_dump(raw)))
    _materialize(cfg, queries, judgments, dg.AssetSelection.assets("evaluation_report"))
    assert (
        "Public and held-out parts"
        not in (tmp_path / "data" / "reports" / "evaluation" / "scoreboard.html").read_text()
    )
