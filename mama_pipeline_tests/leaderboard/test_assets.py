"""The leaderboard assets on stub upstream tables, with submissions inserted into the submissions area's tables
as its asset writes them: side by side with the configured entries, refusals without figures, per-query files that
reproduce a paired test with scipy, byte-identical rebuilds and releases, the held-out gap, and the page in
headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pytest
import yaml

from mama_pipeline.common.held_out import hash_position
from mama_pipeline.leaderboard._leaderboard_files import read_per_query
from mama_pipeline.leaderboard.assets import mamabench_leaderboard, mamaretrieval_leaderboard
from mama_pipeline.release._leaderboard_part import mamaretrieval_part, released_leaderboard
from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded

QUERIES = [f"q_{i:05d}" for i in range(1, 25)]
ITEMS = [f"medmcqa:{i}" for i in range(20)]
PARENTS = 12  # robustness parents (two variants each)
MP_QUESTIONS = 6  # multi-passage questions
RESAMPLES = 300


def _per_query() -> pl.DataFrame:
    rows = []
    for i, q in enumerate(QUERIES):
        for r, hit, ndcg in (
            ("bm25", float(i % 2), 0.3 + 0.01 * (i % 7)),
            ("dense", float(i not in (3, 8)), 0.6 + 0.01 * (i % 5)),
        ):
            rows += [
                (r, q, "Success(rel=3)@5", hit),
                (r, q, "nDCG@10", ndcg),
                (r, q, "Judged@5", 1.0),
                (r, q, "Judged@10", 0.9 if r == "bm25" else 1.0),
                (r, q, "P@5", 0.2),
            ]
    return pl.DataFrame(rows, schema=["retriever", "query_id", "measure", "value"], orient="row")


def _grades() -> pl.DataFrame:
    rows = []
    for i, item in enumerate(ITEMS):
        for system, correct in (("sys-a", i % 4 != 0), ("sys-b", i % 2 == 0)):
            rows.append((system, item, "mcq", "medmcqa", "MATERNAL", "graded", float(correct), correct, False))
        # sys-b leaves most short answers unanswered: over its failure bound, refused
        item_sa = f"kenya_vignettes:{i}"
        rows.append(("sys-a", item_sa, "short_answer", "kenya_vignettes", "MATERNAL", "graded", 0.5, None, False))
        rows.append(
            (
                "sys-b",
                item_sa,
                "short_answer",
                "kenya_vignettes",
                "MATERNAL",
                "answer_failed" if i % 2 else "graded",
                None if i % 2 else 1.0,
                None,
                False,
            )
        )
    df = pl.DataFrame(
        rows,
        schema=["system", "item_id", "track", "pool", "category", "status", "score", "correct", "invalid"],
        orient="row",
    )
    return df.with_columns(pl.col("system").alias("_partition"))


KINDS = ("typo", "abbrev")


def _robustness() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(query_variants, robustness_per_query): two variants of each of PARENTS parents, the paired values in a
    shuffled order (the order the robustness area's join happens to give is no order at all)."""
    rng = np.random.default_rng(5)
    parents = QUERIES[:PARENTS]
    variants = pl.DataFrame(
        [(f"{p}~{k}", p, k, "rule", f"{p} {k}", p, "t1", "rule") for p in parents for k in KINDS],
        schema=["variant_id", "parent_id", "kind", "method", "query_text", "parent_text", "tier", "source"],
        orient="row",
    )
    rows = []
    for r, level in (("bm25", 0.4), ("dense", 0.6)):
        for p in parents:
            for k in KINDS:
                for m in ("Success(rel=3)@5", "nDCG@10", "Judged@5", "Judged@10"):
                    v = float(rng.random() < level) if m.startswith("Success") else float(rng.uniform(0, 1))
                    rows.append((r, p, k, m, v, v))
    pairs = pl.DataFrame(rows, schema=["retriever", "parent_id", "kind", "measure", "clean", "variant"], orient="row")
    return variants, pairs.sample(fraction=1.0, shuffle=True, seed=3)


def _stubs(robust: bool = False):
    @dg.asset(key="per_query_results")
    def per_query_results() -> pl.DataFrame:
        return _per_query()

    @dg.asset(key="multipassage_per_query")
    def multipassage_per_query() -> pl.DataFrame:
        return pl.DataFrame(
            [
                (r, f"mp_{i:03d}", m, float((i + (r == "dense")) % 2))
                for r in ("bm25", "dense")
                for i in range(MP_QUESTIONS)
                for m in ("AllIn@10[pieces]", "Judged@10")
            ],
            schema=["retriever", "query_id", "measure", "value"],
            orient="row",
        )

    @dg.asset(key="query_variants")
    def query_variants() -> pl.DataFrame:
        if robust:
            return _robustness()[0]
        return pl.DataFrame(schema={"variant_id": pl.String, "parent_id": pl.String, "kind": pl.String})

    @dg.asset(key="robustness_per_query")
    def robustness_per_query() -> pl.DataFrame:
        from mama_pipeline.robustness._robustness_scoreboard import PAIR_SCHEMA

        return _robustness()[1].cast(PAIR_SCHEMA) if robust else pl.DataFrame(schema=PAIR_SCHEMA)

    @dg.asset(key="system_grades")
    def system_grades() -> pl.DataFrame:
        return _grades()

    return [per_query_results, multipassage_per_query, query_variants, robustness_per_query, system_grades]


def _config(tmp: Path, **extra) -> Path:
    cfg = {
        "data_dir": str(tmp / "data"),
        "evaluation": {
            "cutoffs": [5, 10],
            "significance_measures": ["Success(rel=3)@5", "nDCG@10"],
            "headline_measure": "Success(rel=3)@5",
            "resamples": RESAMPLES,
        },
        "multipassage": {
            "significance_measures": ["AllIn@10[pieces]"],
            "headline_measure": "AllIn@10[pieces]",
            "cutoffs": [10],
        },
        "systems": {"entries": [{"name": "sys-a"}, {"name": "sys-b"}], "resamples": RESAMPLES},
        **extra,
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(with_embedded(cfg)))
    return path


def _submit(store: Store) -> None:
    """Two submissions as the submissions area stores them: a retrieval run (its multi-passage track refused) and
    an answers file (its short-answer track refused)."""
    store.ensure_tables("submissions", "submission_per_query", "submission_tracks")
    with store.connect(write=True) as con:
        for sid, kind, name in (("r1", "retrieval", "new-retriever"), ("a1", "answers", "new-system")):
            con.execute(
                "INSERT INTO submissions VALUES (?, ?, ?, 'm', 'https://x', '2026-12-01', '[]', 'j', 'h', 'c0ffee')",
                [sid, kind, name],
            )
        for i, q in enumerate(QUERIES):
            hit = float(i not in (3, 8, 11))  # close to dense
            ndcg = 0.62 + 0.01 * (i % 3)
            for m, v in (("Success(rel=3)@5", hit), ("nDCG@10", ndcg), ("Judged@5", 0.8), ("Judged@10", 0.7)):
                con.execute("INSERT INTO submission_per_query VALUES ('r1', 'main', ?, ?, ?)", [q, m, v])
        con.execute("INSERT INTO submission_per_query VALUES ('r1', 'multipassage', 'mp_000', 'AllIn@10[pieces]', 1)")
        for i, item in enumerate(ITEMS):
            con.execute(
                "INSERT INTO submission_per_query VALUES ('a1', 'mcq', ?, 'score', ?)",
                [item, None if i == 0 else float(i % 3 != 0)],
            )  # item 0 left out (null)
        rows = [
            ("r1", "main", 24, 24, 0, 0, 0, 30, None),
            ("r1", "multipassage", 6, 0, 0, 0, 0, 0, "judge failed on 5 of 9 holes (bound 5%)"),
            ("a1", "mcq", 20, 19, 1, 0, 0, 0, None),
            ("a1", "short_answer", 20, 2, 0, 0, 18, 0, "answer_grader failed on 18 of 20 answers"),
        ]
        con.executemany("INSERT INTO submission_tracks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _materialize(config: Path, robust: bool = False) -> None:
    with dg.instance_for_test() as instance:
        dg.materialize(
            [*_stubs(robust), mamaretrieval_leaderboard, mamabench_leaderboard],
            resources=shared_resources(str(config)),
            instance=instance,
            raise_on_error=True,
        )


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_without_any_submission_the_boards_hold_the_configured_entries(tmp_path):
    config = _config(tmp_path)
    _materialize(config)
    board = Store(tmp_path / "data" / "mama.duckdb").read_table("leaderboard")
    assert set(board["source"]) == {"configured"}
    heads = board.filter(pl.col("headline"))
    assert sorted(heads.filter(pl.col("track") == "main")["name"]) == ["bm25", "dense"]
    assert heads.filter(pl.col("track") == "robustness").height == 0  # no variant: an empty board
    doc = json.loads((tmp_path / "data" / "leaderboard" / "mamaretrieval" / "leaderboard.json").read_text())
    assert [t["track"] for t in doc["tracks"]] == ["main", "robustness", "multipassage"]
    assert doc["tracks"][1]["entries"] == []


def test_submissions_beside_configured_entries_refusals_paired_test_rebuild_release_and_page(tmp_path):
    config = _config(tmp_path)
    store = Store(tmp_path / "data" / "mama.duckdb")
    _submit(store)
    _materialize(config)
    board = store.read_table("leaderboard")
    main = board.filter((pl.col("track") == "main") & pl.col("headline")).sort("position")
    assert set(main["entry_id"]) == {"configured/bm25", "configured/dense", "submission/r1"}
    sub = main.filter(pl.col("entry_id") == "submission/r1").row(0, named=True)
    assert (sub["name"], sub["n"], sub["judged_measure"]) == ("new-retriever", len(QUERIES), "Judged@5")
    assert sub["mean"] == pytest.approx(21 / 24) and sub["judged_mean"] == pytest.approx(0.8)
    ndcg = board.filter(
        (pl.col("track") == "main") & (pl.col("measure") == "nDCG@10") & (pl.col("entry_id") == "configured/bm25")
    ).row(0, named=True)
    assert ndcg["judged_measure"] == "Judged@10" and ndcg["judged_mean"] == pytest.approx(0.9)

    # refused tracks: listed with the reason, no figure, in the table, the JSON and the page
    mp = board.filter((pl.col("track") == "multipassage") & (pl.col("entry_id") == "submission/r1")).row(0, named=True)
    assert (mp["standing"], mp["mean"], mp["ci_low"], mp["n"]) == ("refused", None, None, 0)
    sa = board.filter(pl.col("track") == "short_answer").sort("entry_id")
    assert sa.filter(pl.col("standing") == "refused")["entry_id"].to_list() == ["configured/sys-b", "submission/a1"]
    assert sa.filter(pl.col("standing") == "refused")["mean"].null_count() == 2
    mcq = board.filter(pl.col("track") == "mcq")
    assert set(mcq["entry_id"]) == {"configured/sys-a", "configured/sys-b", "submission/a1"}
    a1 = mcq.filter(pl.col("entry_id") == "submission/a1").row(0, named=True)
    kept = [float(i % 3 != 0) for i in range(1, 20)]
    assert (a1["n"], a1["mean"]) == (19, pytest.approx(sum(kept) / 19))  # the null item is left out, n says so

    folder = tmp_path / "data" / "leaderboard" / "mamaretrieval"
    doc = json.loads((folder / "leaderboard.json").read_text())
    track = {t["track"]: t for t in doc["tracks"]}
    refused = next(e for e in track["multipassage"]["entries"] if e["entry_id"] == "submission/r1")
    assert refused["refused"].startswith("judge failed")
    assert "figures" not in refused and "per_query_file" not in refused
    page = (folder / "leaderboard.html").read_text()
    assert "refused (1 entry): judge failed on 5 of 9 holes (bound 5%)" in page
    assert "<th>nDCG@10</th>" in page and "Success(rel=" not in page  # the paper's labels, not ir_measures names
    # every secondary figure with its n: the other measure's mean, Judged@k
    r1 = next(e for e in track["main"]["entries"] if e["entry_id"] == "submission/r1")["figures"]
    assert f"{r1['nDCG@10']['mean']:.3f} (n 24)" in page and "Judged@5 0.800 (n 24)" in page
    assert track["main"]["standings"]["Success(rel=3)@5"]["separable"] is True
    manuscript = folder / "manuscript"
    assert sorted(p.name for p in manuscript.iterdir() if p.name.startswith("mamaretrieval_main")) == [
        "mamaretrieval_main.csv",
        "mamaretrieval_main.tex",
        "mamaretrieval_main_forest.pdf",
        "mamaretrieval_main_forest.png",
        "mamaretrieval_main_forest.svg",
    ]
    assert "\\toprule" in (manuscript / "mamaretrieval_main.tex").read_text()

    # the per-query files of two entries reproduce their paired test with scipy alone
    from scipy import stats

    entries = {e["entry_id"]: e for e in track["main"]["entries"]}
    a = read_per_query((folder / entries["configured/dense"]["per_query_file"]).read_bytes())
    b = read_per_query((folder / entries["submission/r1"]["per_query_file"]).read_bytes())
    pair = (
        a.filter(pl.col("measure") == "nDCG@10")
        .join(b.filter(pl.col("measure") == "nDCG@10"), on="query_id")
        .sort("query_id")
    )
    x, y = pair["value"].to_numpy(), pair["value_right"].to_numpy()
    p = stats.permutation_test(
        (x, y),
        lambda u, v, axis=-1: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=RESAMPLES,
        alternative="two-sided",
        batch=1000,
        rng=np.random.default_rng(0),
    ).pvalue
    listed = next(
        c
        for c in track["main"]["comparisons"]["nDCG@10"]
        if (c["entry_a"], c["entry_b"]) == ("configured/dense", "submission/r1")
    )
    assert listed["n_shared"] == len(QUERIES) == pair.height
    assert listed["p_randomization"] == pytest.approx(float(p), abs=1e-12)

    # a rebuild is byte-identical, and the release carries the same bytes under leaderboard/
    first = _folder_bytes(folder)
    _materialize(config)
    assert _folder_bytes(folder) == first
    s = load_settings(str(config))
    part = mamaretrieval_part(s, store, None)
    assert part.texts == {f"leaderboard/{k}": v for k, v in first.items()}
    write_mamaretrieval_release(tmp_path / "rel1", fx.inputs(), [part])
    write_mamaretrieval_release(tmp_path / "rel2", fx.inputs(), [mamaretrieval_part(s, store, None)])
    rel = _folder_bytes(tmp_path / "rel1")
    assert rel == _folder_bytes(tmp_path / "rel2")
    assert {k: v for k, v in rel.items() if k.startswith("leaderboard/")} == part.texts
    assert "## Leaderboard" in rel["README.md"].decode()
    manifest = json.loads(rel["manifest.json"])
    assert "leaderboard/leaderboard.json" in manifest["files"]
    assert "leaderboard/manuscript/mamaretrieval_main.tex" in manifest["files"]
    assert "leaderboard/manuscript/mamaretrieval_main_forest.pdf" in manifest["files"]
    bench = released_leaderboard(s, store, "mamabench")
    assert "leaderboard/per_query/mcq/submission/a1.tsv" in bench.files
    assert bench.files == {
        f"leaderboard/{k}": v for k, v in _folder_bytes(tmp_path / "data" / "leaderboard" / "mamabench").items()
    }

    _screenshot(tmp_path / "data" / "reports" / "leaderboard" / "mamaretrieval.html", tmp_path / "leaderboard.png")

    # the reports index links both leaderboards with their headline figures (the best entries, the tied count)
    from mama_pipeline.reports._index import render_index

    index = render_index(tmp_path / "data" / "reports")
    assert "<a href='leaderboard/mamaretrieval.html'>Leaderboard (mamaretrieval)</a>" in index
    assert "<a href='leaderboard/mamabench.html'>Leaderboard (mamabench)</a>" in index
    assert re.search(
        # 24 queries: the interval is refused, so the label does not promise one and the figure carries its mark
        r"main: best on [^<(]+</th><td>\S+ \d\.\d{3} \(no interval[\u00b9\u00b2\u00b3\u2070-\u2079]+\) over 24 queries; "
        r"\d tied with best, \d below best; 3 entries",
        index,
    )


def _screenshot(page: Path, png: Path) -> None:
    from mama_pipeline_tests.headless_browser import check_page, find_chromium

    chromium = find_chromium()
    check = check_page(page, chromium)
    assert check.errors == [] and check.title == "mamaretrieval leaderboard"
    assert check.headings[:2] == ["About", "mamaretrieval: main track"]
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={png}",
            "--window-size=1400,1100",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_held_out_rule_gives_public_figures_with_the_held_out_mean_and_gap_beside(tmp_path):
    salt, share = "lb-split", 0.3
    config = _config(tmp_path, release={"held_out": {"share": share, "salt": salt}})
    _materialize(config)
    held = {q for q in QUERIES if hash_position(q, salt) < share}
    assert 2 <= len(held) <= len(QUERIES) - 2
    board = Store(tmp_path / "data" / "mama.duckdb").read_table("leaderboard")
    bm25 = board.filter(
        (pl.col("track") == "main") & (pl.col("entry_id") == "configured/bm25") & pl.col("headline")
    ).row(0, named=True)
    hits = {q: float(i % 2) for i, q in enumerate(QUERIES)}
    public = [hits[q] for q in QUERIES if q not in held]
    held_out = [hits[q] for q in QUERIES if q in held]
    assert (bm25["n"], bm25["n_held_out"]) == (len(public), len(held_out))
    assert bm25["mean"] == pytest.approx(np.mean(public))
    assert bm25["mean_held_out"] == pytest.approx(np.mean(held_out))
    assert bm25["gap"] == pytest.approx(np.mean(public) - np.mean(held_out))
    assert 0 <= bm25["p_gap"] <= 1
    folder = tmp_path / "data" / "leaderboard" / "mamaretrieval"
    files = read_per_query((folder / "per_query" / "main" / "configured" / "bm25.tsv").read_bytes())
    assert set(files["query_id"]) == set(QUERIES) - held  # public queries only
    doc = json.loads((folder / "leaderboard.json").read_text())
    assert doc["held_out"]["share"] == share and "held_out_note" in doc
    page = (folder / "leaderboard.html").read_text()
    assert f"{bm25['mean_held_out']:.3f} (n {len(held_out)})" in page  # the held-out mean with its n
    assert f"{bm25['gap']:.3f} (n {len(public)} vs {len(held_out)})" in page
    # the release accepts the leaderboard beside its held-out split
    s = load_settings(str(config))
    rule = s.release.held_out.rule("query_id")
    part = mamaretrieval_part(s, Store(tmp_path / "data" / "mama.duckdb"), None)
    write_mamaretrieval_release(tmp_path / "rel", fx.inputs(), [part], rule)
    assert (tmp_path / "rel" / "leaderboard" / "leaderboard.json").exists()


def test_without_configured_systems_the_mamabench_boards_hold_the_submissions(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        with_embedded(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "systems": {"resamples": RESAMPLES}}))
    )
    store = Store(tmp_path / "data" / "mama.duckdb")
    _submit(store)
    with dg.instance_for_test() as instance:
        dg.materialize(
            [mamabench_leaderboard], resources=shared_resources(str(config)), instance=instance, raise_on_error=True
        )
    board = store.read_table("leaderboard").filter(pl.col("headline"))
    assert board.sort("track")[["track", "entry_id", "standing"]].rows() == [
        ("mcq", "submission/a1", "best"),
        ("short_answer", "submission/a1", "refused"),
    ]


def test_every_published_interval_is_scipy_on_the_released_per_query_file(tmp_path, monkeypatch):
    """For every track of both boards: each entry's interval in leaderboard.json is scipy.stats.bootstrap (BCa, the
    declared seed and resamples) on the values of its released per-query file, read in file order (sorted by query
    id); the robustness track's values arrive from the robustness area in no particular order."""
    from scipy import stats

    # more values than MIN_INTERVAL_N on every track, so each one has intervals to reproduce
    for name, value in (
        ("QUERIES", [f"q_{i:05d}" for i in range(1, 41)]),
        ("ITEMS", [f"medmcqa:{i}" for i in range(40)]),
        ("PARENTS", 20),
        ("MP_QUESTIONS", 40),
    ):
        monkeypatch.setitem(globals(), name, value)

    config = _config(tmp_path)
    store = Store(tmp_path / "data" / "mama.duckdb")
    _submit(store)
    _materialize(config, robust=True)
    checked, compared = {}, {}
    for benchmark in ("mamaretrieval", "mamabench"):
        folder = tmp_path / "data" / "leaderboard" / benchmark
        doc = json.loads((folder / "leaderboard.json").read_text())
        for track in doc["tracks"]:
            for e in track["entries"]:
                if "figures" not in e:
                    continue
                released = pl.read_csv(
                    folder / e["per_query_file"], separator="\t", schema_overrides={"value": pl.Float64}
                )
                for measure, fig in e["figures"].items():
                    values = released.filter(pl.col("measure") == measure)["value"].to_numpy()
                    assert fig["n"] == values.size
                    if np.all(values == values[0]):  # no interval from values that are all equal: its reason instead
                        assert fig["ci_low"] is None and fig["ci_high"] is None and fig["ci_note"]
                        continue
                    ci = stats.bootstrap(
                        (values,),
                        np.mean,
                        n_resamples=doc["resamples"],
                        confidence_level=doc["confidence"],
                        method="BCa",
                        rng=np.random.default_rng(doc["seed"]),
                    ).confidence_interval
                    if np.isfinite(ci.low) and np.isfinite(ci.high):
                        compared[track["track"]] = compared.get(track["track"], 0) + 1
                        assert (fig["ci_low"], fig["ci_high"]) == (
                            pytest.approx(ci.low, abs=1e-12),
                            pytest.approx(ci.high, abs=1e-12),
                        )
                    else:
                        assert fig["ci_low"] is None and fig["ci_note"]
                    checked[track["track"]] = checked.get(track["track"], 0) + 1
    assert set(checked) >= {"main", "robustness", "multipassage", "mcq"}, checked
    assert set(compared) >= {"main", "robustness", "multipassage", "mcq"}, compared
    robustness = next(
        t
        for t in json.loads((tmp_path / "data" / "leaderboard" / "mamaretrieval" / "leaderboard.json").read_text())[
            "tracks"
        ]
        if t["track"] == "robustness"
    )
    assert robustness["standings"]["Success(rel=3)@5"]["units"] == 20  # the test's unit: the parent query
