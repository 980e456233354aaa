"""The held-out split of the mamaretrieval configurations: robustness variants follow their source query, multi-passage
questions split by their own id, clinician tasks by the query of their pair. Every file of the public folder is read
for held-out ids; the held-out folder holds exactly them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import polars as pl

from mama_pipeline.common.held_out import HeldOutRule, held_out_path
from mama_pipeline.release._clinician_part import configurations as clinician_configurations
from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline.release._multipassage_part import build_part as multipassage_part
from mama_pipeline.release._robustness_part import build_part as robustness_part
from mama_pipeline.release._verify import verify_release
from mama_pipeline.robustness._abbreviations import load_table
from mama_pipeline.robustness._variants import DECISION_SCHEMA, VARIANT_COLUMNS
from mama_pipeline.robustness.settings import RobustnessSettings
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.multipassage.test_release_and_report import track
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded

SHARE = 0.5
# ids of the released rows of each kind, as the test writes them below
QUERY_IDS = ["q_00001", "q_00002"]
VARIANT_IDS = ["q_00001~shorthand", "q_00002~shorthand"]
QUESTION_IDS = ["mq_00001", "mq_00002"]
ID = re.compile(r"(?<![A-Za-z0-9_])m?q_\d{5}(?:~[a-z_]+)?")


def _held(item_id: str, salt: str) -> bool:
    return int(hashlib.sha256(f"{salt}:{item_id}".encode()).hexdigest()[:16], 16) / 16**16 < SHARE


def _salt() -> str:
    """A salt holding out q_00001 and mq_00001 and keeping q_00002 and mq_00002 public (checked by the hash)."""
    for i in range(1000):
        salt = f"salt-{i}"
        if (
            _held("q_00001", salt)
            and not _held("q_00002", salt)
            and _held("mq_00001", salt)
            and not _held("mq_00002", salt)
        ):
            return salt
    raise AssertionError("no salt")


def _robustness(rule: HeldOutRule):
    return robustness_part(
        fx.inputs(),
        RobustnessSettings(),
        load_table(),
        *_variant_tables(),
        {"robustness/prompts/x.txt": b"p"},
        held_out=rule,
    )


def _variant_tables():
    """query_variants, variant_decisions, variant_labels and variant_rankings of one variant of each query."""
    queries = fx.queries().sort("query_id")
    variants = pl.DataFrame(
        [
            {
                "variant_id": f"{q}~shorthand",
                "parent_id": q,
                "kind": "shorthand",
                "method": "shorthand",
                "query_text": f"short {q}",
                "parent_text": t,
                "tier": tier,
                "source": src,
                "seed": None,
                "recipe": "r",
                "gate": None,
                "model": None,
                "prompt_hash": None,
                "gate_model": None,
                "gate_prompt_hash": None,
            }
            for q, t, tier, src in queries.select("query_id", "query_text", "tier", "source").iter_rows()
        ]
    ).select(VARIANT_COLUMNS)
    decisions = pl.DataFrame(
        [
            {
                **{c: None for c in DECISION_SCHEMA},
                "variant_id": f"{q}~{k}",
                "parent_id": q,
                "kind": k,
                "method": k,
                "status": s,
                "variant_text": f"short {q}",
            }
            for q in QUERY_IDS
            for k, s in (("shorthand", "kept"), ("typo", "identical_to_parent"))
        ],
        schema=DECISION_SCHEMA,
    )
    labels = pl.DataFrame(
        [
            {
                "variant_id": v,
                "parent_id": v.split("~")[0],
                "kind": "shorthand",
                "chunk_id": c,
                "d1_topic": True,
                "d2_meaningful": 2,
                "d3_actionable": 1,
                "d4_density": 2,
                "score": 5,
                "origin": "hole",
                "judge_model": "judge-test",
                "prompt_hash": fx.JUDGE_HASH,
            }
            for v in VARIANT_IDS
            for c in fx.IDS[:2]
        ]
    )
    rankings = pl.DataFrame(
        [
            {"query_id": v, "retriever": "bm25", "rank": r, "chunk_id": fx.IDS[r - 1], "score": 3.0 - r}
            for v in VARIANT_IDS
            for r in (1, 2)
        ]
    )
    return variants, decisions, labels, rankings


def _multipassage(rule: HeldOutRule):
    return multipassage_part(fx.inputs(), _multipassage_track(), rule)


def _multipassage_track():
    """The fixture track's question mq_00001 (set ms_a; ms_b failed) and a second, mq_00002 (set ms_c)."""
    one = track()
    c2, c3 = fx.IDS[1:3]
    second = {  # mq_00002 from set ms_c, beside the fixture's mq_00001 (ms_a) and the failed set ms_b
        "questions": pl.DataFrame(
            {
                "query_id": ["mq_00002"],
                "query_text": ["Q2?"],
                "set_id": ["ms_c"],
                "chunk_ids": [[c2, c3]],
                "facts": [["fact three", "fact four"]],
                "fact_chunk_ids": [[c2, c3]],
                "kind": ["section"],
                "size": [2],
                "source": ["who-a"],
                "tier": ["high"],
            }
        ),
        "decisions": one.decisions.filter(pl.col("set_id") == "ms_a").with_columns(
            set_id=pl.lit("ms_c"), chunk_ids=pl.lit([c2, c3]), question=pl.lit("Q2?")
        ),
        "rankings": one.rankings.with_columns(query_id=pl.lit("mq_00002")),
        "labels": one.labels.with_columns(query_id=pl.lit("mq_00002")),
        "fact_labels": one.fact_labels.with_columns(query_id=pl.lit("mq_00002")),
    }
    board = pl.DataFrame(
        {"tier": ["all"], "track": [True], "retriever": ["bm25"], "measure": ["alpha_nDCG@10"], "mean": [0.5]}
    )
    return track(
        scoreboard=board, **{k: pl.concat([getattr(one, k), v], how="vertical_relaxed") for k, v in second.items()}
    )


def _clinician(tmp_path: Path, salt: str):
    store = Store(tmp_path / "mama.duckdb")
    pairs = [(q, c) for q in QUERY_IDS for c in fx.IDS[:2]]
    store.write_table(
        "clinician_validated",
        pl.DataFrame(
            {
                "kind": ["relevance"] * 4,
                "task_key": [f"relevance:{q}:{c}" for q, c in pairs],
                "query_id": [q for q, _ in pairs],
                "chunk_id": [c for _, c in pairs],
                "item_id": [None] * 4,
                "category": [None] * 4,
                "annotations": [2] * 4,
                "annotators": ["a1,a2"] * 4,
                "tie": [False] * 4,
                "tied_on": [None] * 4,
                "d1_topic": [True] * 4,
                "d2_meaningful": [2] * 4,
                "d3_actionable": [1] * 4,
                "d4_density": [2] * 4,
                "score": [5] * 4,
                "synthetic": [True] * 4,
            },
            schema_overrides={"item_id": pl.String, "category": pl.String, "tied_on": pl.String},
        ),
    )
    s = PipelineSettings.model_validate(
        with_embedded(
            {"clinician": {"release_synthetic_labels": True}, "release": {"held_out": {"share": SHARE, "salt": salt}}}
        )
    )
    (config,) = clinician_configurations("mamaretrieval", store, s)
    return config.as_part()


def _text(path: Path) -> str:
    """Every value of a parquet table, or the file's text."""
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
        return "\n".join(str(v) for c in frame.columns for v in frame[c].to_list())
    return path.read_text()


def _ids(folder: Path) -> dict[str, set[str]]:
    return {str(p.relative_to(folder)): set(ID.findall(_text(p))) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_release_with_every_configuration_holds_no_held_out_id_in_any_public_file(tmp_path):
    salt = _salt()
    rule = HeldOutRule(SHARE, salt, "query_id")
    held_ids = {"q_00001", "q_00001~shorthand", "q_00001~typo", "mq_00001"}
    public_ids = {"q_00002", "q_00002~shorthand", "q_00002~typo", "mq_00002"}
    parts = [_robustness(rule), _multipassage(rule), _clinician(tmp_path, salt)]
    public = tmp_path / "releases" / "mamaretrieval" / "1.0.0"
    manifest = write_mamaretrieval_release(public, fx.inputs(), parts, rule)
    held = held_out_path(public, "mamaretrieval")

    found = _ids(public)
    assert len(found) > 30  # every file of the public folder was read: tables, card, manifest, prompts, qrels
    leaks = {path: ids & held_ids for path, ids in found.items() if ids & held_ids}
    assert not leaks
    # the public rows of every configuration are released (q_00042~typo: the card's example of a variant id)
    assert set().union(*found.values()) - {"q_00042~typo"} == public_ids
    held_found = _ids(held)
    assert set().union(*held_found.values()) == held_ids  # the held-out folder holds exactly the held-out ids
    # each configuration's held-out table holds its held-out rows, by the ids its items carry
    for rel, column, ids in (
        ("robustness/queries.parquet", "query_id", {"q_00001~shorthand"}),
        ("robustness/decisions.parquet", "variant_id", {"q_00001~shorthand", "q_00001~typo"}),
        ("robustness/judgments.parquet", "query_id", {"q_00001~shorthand"}),
        ("robustness/rankings.parquet", "query_id", {"q_00001~shorthand"}),
        ("robustness/beir/queries/queries-00000-of-00001.parquet", "_id", {"q_00001~shorthand"}),
        ("multipassage/questions.parquet", "query_id", {"mq_00001"}),
        ("multipassage/judgments.parquet", "query_id", {"mq_00001"}),
        ("multipassage/fact_judgments.parquet", "query_id", {"mq_00001"}),
        ("multipassage/rankings.parquet", "query_id", {"mq_00001"}),
        ("data/clinician_validated.parquet", "query_id", {"q_00001"}),
    ):
        assert set(pl.read_parquet(held / rel)[column].to_list()) == ids, rel
        assert not set(pl.read_parquet(public / rel)[column].to_list()) & ids, rel
    assert (held / "multipassage/facts.diversity.txt").read_text().split()[0] == "mq_00001"
    # a failed set (ms_b) is no question: its decision stays public; the held-out question's set goes with it
    assert pl.read_parquet(public / "multipassage/decisions.parquet")["set_id"].to_list() == ["ms_b", "ms_c"]
    assert pl.read_parquet(held / "multipassage/decisions.parquet")["set_id"].to_list() == ["ms_a"]

    counts = {
        "robustness": ("variants", 1, 1),
        "multipassage": ("questions", 1, 1),
        "clinician_validated": ("tasks", 2, 2),
    }
    for name, (items, pub, out) in counts.items():
        c = manifest["held_out"]["configurations"][name]
        assert (c["items"], c["public_items"], c["held_out_items"]) == (items, pub, out), name
    held_manifest = json.loads((held / "manifest.json").read_text())
    assert held_manifest["held_out"] == manifest["held_out"]
    assert held_manifest["configurations"]["robustness"]["figures"]["variants"] == 1
    assert held_manifest["configurations"]["multipassage"]["figures"]["questions"] == 1
    assert held_manifest["configurations"]["clinician_validated"]["rows"] == 2
    assert manifest["configurations"]["multipassage"]["figures"]["questions"] == 1  # public figures: public rows
    card = (public / "README.md").read_text()
    assert "Configuration `robustness`: 1 of 2 variants held out" in card
    assert "Configuration `clinician_validated`: 2 of 4 tasks held out" in card
    # the track's scoreboard (means over every question) is shown with the public part only, saying so
    assert "### Multi-passage scoreboard (all 2 questions, the 1 held-out ones included)" in card
    assert held_manifest["configurations"]["multipassage"]["scoreboard"] is None
    assert verify_release(public).ok and verify_release(held).ok


def test_the_robustness_configuration_reads_the_rule_from_the_settings(tmp_path):
    from mama_pipeline.release._robustness_part import robustness_part as from_store

    salt = _salt()
    store = Store(tmp_path / "mama.duckdb")
    for name, frame in zip(
        ("query_variants", "variant_decisions", "variant_labels", "variant_rankings"), _variant_tables()
    ):
        store.write_table(name, frame, partition="bm25" if name == "variant_rankings" else None)  # per retriever
    s = PipelineSettings.model_validate(
        with_embedded({"robustness": {"release": True}, "release": {"held_out": {"share": SHARE, "salt": salt}}})
    )
    part = from_store(s, store, fx.inputs())
    assert (part.split["public_items"], part.split["held_out_items"]) == (1, 1)
    assert part.tables["robustness/queries.parquet"].collect()["query_id"].to_list() == ["q_00002~shorthand"]
    assert part.held_out.tables["robustness/queries.parquet"].collect()["query_id"].to_list() == ["q_00001~shorthand"]
    off = PipelineSettings.model_validate(
        with_embedded({"robustness": {"release": True}})
    )  # share 0: one part, not split
    whole = from_store(off, store, fx.inputs())
    assert (
        whole.split is None
        and whole.held_out is None
        and whole.tables["robustness/queries.parquet"].collect().height == 2
    )


def test_the_multipassage_configuration_reads_the_rule_from_the_settings(tmp_path):
    from mama_pipeline.release._multipassage_part import (
        multipassage_part as from_store,
    )

    salt = _salt()
    t = _multipassage_track()
    made = {
        "writer_model": "w",
        "writer_prompt_hash": "h",
        "verifier_model": "v",
        "verifier_prompt_hash": "h",
        "temperature": 0.0,
        "corpus_version": fx.CORPUS_VERSION,
    }
    store = Store(tmp_path / "mama.duckdb")
    store.write_table("multipassage_questions", t.questions.with_columns(**{k: pl.lit(v) for k, v in made.items()}))
    store.write_table(
        "multipassage_decisions",
        t.decisions.with_columns(
            **{k: pl.lit(v) for k, v in made.items() if k not in ("writer_model", "verifier_model")}
        ),
    )
    store.write_table("multipassage_labels", t.labels.with_columns(reused=pl.lit(False)))
    store.write_table("multipassage_fact_labels", t.fact_labels)
    store.write_table("multipassage_scoreboard", t.scoreboard.with_columns(position=pl.lit(1), n_queries=pl.lit(2)))
    store.write_table("multipassage_rankings", t.rankings, partition="bm25")
    s = PipelineSettings.model_validate(
        with_embedded(
            {
                "retrieval": {"retrievers": [{"name": "bm25", "kind": "bm25"}]},
                "llm": {"judge": {"max_failure_rate": 0.5}},
                "multipassage": {"release": True, "pool_depth": 2},
                "release": {"held_out": {"share": SHARE, "salt": salt}},
            }
        )
    )
    part = from_store(s, store, fx.inputs())
    assert (part.split["public_items"], part.split["held_out_items"]) == (1, 1)
    assert part.tables["multipassage/questions.parquet"]["query_id"].to_list() == ["mq_00002"]
    assert part.held_out.tables["multipassage/questions.parquet"]["query_id"].to_list() == ["mq_00001"]
