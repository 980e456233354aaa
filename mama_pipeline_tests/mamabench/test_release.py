"""The release folder: hub layout, figures, determinism, and atomic replacement."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from mama_pipeline.mamabench._pools import POOLS
from mama_pipeline.mamabench._schema import CanonicalItem, Category, item_json_schema
from mama_pipeline.mamabench._scope_agreement import agreement_stats, prior_pairs
from mama_pipeline.mamabench._scope_prompt import SCOPE_TEMPLATE
from mama_pipeline.mamabench._scoping import VERDICT_SCHEMA, criteria_table, finalise, joined_verdicts
from mama_pipeline.mamabench._yields import yield_table
from mama_pipeline.release._mamabench import release_files, write_release
from mama_pipeline.release._mamabench_inputs import ClassifierInfo, ReleaseInputs
from mama_pipeline_tests.mamabench.helpers import adapted

CATS = [c.value for c in Category]


def scripted_verdicts(rows: pl.DataFrame) -> pl.DataFrame:
    """Verdicts by position: every 7th call failed, the others cycle through the categories."""
    todo = rows.filter(pl.col("scope_mode").is_not_null()).sort("item_id")
    out = []
    for k, (item_id, pool) in enumerate(todo.select("item_id", "pool").iter_rows()):
        failed = k % 7 == 3
        out.append(
            (
                item_id,
                pool,
                "classifier",
                "parse_failed" if failed else "ok",
                None if failed else CATS[k % 5],
                None if failed else "because",
                "thinking",
                "bad json" if failed else None,
                False,
                "model-x",
                "http://x",
                SCOPE_TEMPLATE.id,
                SCOPE_TEMPLATE.hash,
                None,
                "0123456789abcdef",
            )
        )
    v = pl.DataFrame(out, schema=VERDICT_SCHEMA, orient="row")
    return pl.concat([v, joined_verdicts(rows, v)])


@pytest.fixture(scope="module")
def inputs() -> ReleaseInputs:
    rows = pl.concat([adapted(p.name) for p in POOLS])
    verdicts = scripted_verdicts(rows)
    items, accounting = finalise(rows, verdicts)
    provenance = pl.DataFrame(
        {
            "pool": [p.name for p in POOLS],
            "origin": ["f"] * 9,
            "sha256": ["ab" * 32] * 9,
            "revision": [None] * 9,
            "rows": [1] * 9,
            "licence": ["MIT"] * 9,
            "location": ["local"] * 9,
        }
    )
    parity = prior_pairs(rows, verdicts, "kenya_vignettes")
    calibration = pl.DataFrame(
        {
            "prompt_id": ["p2", "p1"],
            "binary_labels": [[True, False], [True]],
            "scope_category": ["MATERNAL", "NEONATAL"],
        }
    )
    return ReleaseInputs(
        name="mamabench",
        version="9.9.9",
        items=items,
        criteria=criteria_table(rows, items),
        accounting=accounting,
        verdicts=verdicts,
        yields=yield_table(accounting),
        provenance=provenance,
        classifier=ClassifierInfo("model-x", SCOPE_TEMPLATE.id, SCOPE_TEMPLATE.hash, SCOPE_TEMPLATE.text, False),
        agreement=agreement_stats(parity),
        agreement_info={"reference_model": "model-y", "pools": ["kenya_vignettes"]},
        parity=agreement_stats(parity),
        calibration=calibration,
    )


def test_layout_and_items(inputs: ReleaseInputs) -> None:
    files = release_files(inputs)
    assert set(files) == {
        "README.md",
        "data/mcq/test.jsonl",
        "data/open_ended/test.jsonl",
        "data/open_ended_rubric/test.jsonl",
        "data/criteria/test.jsonl",
        "data/calibration/test.jsonl",
        "schema/canonical_item.schema.json",
        "manifests/manifest.json",
        "audit/scope_verdicts.jsonl",
        "audit/accounting.jsonl",
        "audit/agreement.json",
        "audit/kenya_parity.json",
        "audit/scope_classifier_prompt.txt",
    }
    released = [
        json.loads(line)
        for k in ("mcq", "open_ended", "open_ended_rubric")
        for line in files[f"data/{k}/test.jsonl"].decode().splitlines()
    ]
    assert len(released) == inputs.items.height
    for item in released:
        CanonicalItem.model_validate(item)
    criteria = {json.loads(line)["criterion_id"] for line in files["data/criteria/test.jsonl"].decode().splitlines()}
    assert {r["criterion_id"] for i in released for r in i.get("rubrics") or []} == criteria
    assert json.loads(files["schema/canonical_item.schema.json"]) == item_json_schema()
    verdict_lines = files["audit/scope_verdicts.jsonl"].decode().splitlines()
    assert len(verdict_lines) == inputs.verdicts.height and "rationale" in json.loads(verdict_lines[0])
    assert "from_cache" not in json.loads(verdict_lines[0])  # a warm rebuild from the same answers: same bytes
    warm = replace(inputs, verdicts=inputs.verdicts.with_columns(from_cache=~pl.col("from_cache")))
    assert release_files(warm)["audit/scope_verdicts.jsonl"] == files["audit/scope_verdicts.jsonl"]
    assert len(files["audit/accounting.jsonl"].decode().splitlines()) == inputs.accounting.height
    assert files["audit/scope_classifier_prompt.txt"].decode() == SCOPE_TEMPLATE.text


def test_manifest_and_card_carry_the_figures(inputs: ReleaseInputs) -> None:
    files = release_files(inputs)
    m = json.loads(files["manifests/manifest.json"])
    assert m["items"]["total"] == inputs.items.height
    assert {s["pool"]: s["kept"] for s in m["sources"]} == dict(zip(inputs.yields["pool"], inputs.yields["kept"]))
    assert {
        "pool": "afrimedqa_saq",
        "status": "refused",
        "reason": "empty_answer",
        "in_prescope": True,
        "rows": 1,
    } in m["refusals"]
    assert not any(r["pool"] == "afrimedqa_mcq" for r in m["refusals"])  # its multi-answer row is out of scope
    assert any(r["reason"] == "parse_failed" for r in m["refusals"])  # unclassified rows are listed too
    assert m["classifier"] == {
        "model": "model-x",
        "prompt_id": "scope_classifier",
        "prompt_hash": SCOPE_TEMPLATE.hash,
        "smoke_test": False,
    }
    assert m["calibration_rows"] == 2 and m["version"] == "9.9.9"
    assert set(m["files"]) == set(files) - {"README.md", "manifests/manifest.json"}
    card = files["README.md"].decode()
    assert card.startswith("---\npretty_name: mamabench\n")
    assert "- config_name: calibration\n  data_files:\n  - split: test\n    path: data/calibration/test.jsonl" in card
    assert "| afrimedqa_mcq | mcq | prescoped | 10 | 4 | 0 | 6 | 0 | 40.0 |" in card
    assert f"**Total kept: {inputs.items.height:,}.**" in card
    assert "Smoke-test build" not in card


def test_bytes_are_deterministic_and_the_write_is_atomic(inputs: ReleaseInputs, tmp_path: Path, monkeypatch) -> None:
    a = write_release(tmp_path / "a" / "mamabench", inputs)
    b = write_release(tmp_path / "b" / "mamabench", inputs)
    assert a == b
    for rel in a:
        assert (tmp_path / "a" / "mamabench" / rel).read_bytes() == (tmp_path / "b" / "mamabench" / rel).read_bytes()

    target = tmp_path / "a" / "mamabench"
    before = {p: (target / p).read_bytes() for p in a}
    calls = {"n": 0}
    real = Path.write_bytes

    def failing(self: Path, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    changed = ReleaseInputs(**{**inputs.__dict__, "version": "10.0.0"})
    with pytest.raises(OSError, match="disk full"):
        write_release(target, changed)
    monkeypatch.undo()
    assert {p: (target / p).read_bytes() for p in a} == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["mamabench"]  # no temp folder left behind


def test_smoke_test_builds_say_so(inputs: ReleaseInputs) -> None:
    smoke = ReleaseInputs(
        **{
            **inputs.__dict__,
            "calibration": None,
            "classifier": ClassifierInfo("smollm2", "scope_classifier", "h", "t", True),
        }
    )
    files = release_files(smoke)
    assert "Smoke-test build" in files["README.md"].decode()
    assert "data/calibration/test.jsonl" not in files


def _held_by_hand(item_id: str, salt: str, share: float) -> bool:
    import hashlib

    return int(hashlib.sha256(f"{salt}:{item_id}".encode()).hexdigest()[:16], 16) / 16**16 < share


def _ids(path: Path) -> set[str]:
    return {json.loads(line)["id"] for line in path.read_text().splitlines()}


def test_held_out_folder_holds_exactly_the_held_out_items_and_the_public_folder_none(
    inputs: ReleaseInputs, tmp_path: Path
) -> None:
    from dataclasses import replace

    from mama_pipeline.common.held_out import HeldOutRule

    every = set(inputs.items["item_id"].to_list())

    def key(i: str) -> str:  # HealthBench pools share prompts: the rule hashes healthbench:<prompt_id>
        pool, _, uid = i.partition(":")
        return f"healthbench:{uid}" if pool.startswith("healthbench") else i

    held = {i for i in every if _held_by_hand(key(i), "salt-a", 0.3)}
    assert 0 < len(held) < len(every)
    held_prompt = next(key(i) for i in sorted(held) if i.startswith("healthbench"))[len("healthbench:") :]
    # the same prompt in two pools falls on one side
    shared = [i for i in every if i.startswith("healthbench") and key(i) == f"healthbench:{held_prompt}"]
    assert set(shared) <= held
    calibration = pl.concat(
        [
            inputs.calibration,
            pl.DataFrame({"prompt_id": [held_prompt], "binary_labels": [[True]], "scope_category": ["MATERNAL"]}),
        ]
    )
    inp = replace(inputs, calibration=calibration, widely_trained=["medmcqa", "medqa_usmle"])
    public = tmp_path / "releases" / "mamabench" / "9.9.9"
    write_release(public, inp, HeldOutRule(0.3, "salt-a", "item_id"))
    private = tmp_path / "releases" / "mamabench-held-out" / "9.9.9"
    sets = ("mcq", "open_ended", "open_ended_rubric")
    public_ids = set().union(*(_ids(public / f"data/{s}/test.jsonl") for s in sets))
    private_ids = set().union(*(_ids(private / f"data/{s}/test.jsonl") for s in sets))
    assert private_ids == held and public_ids == every - held

    def audit_ids(folder: Path, audit: str) -> set[str]:
        return {json.loads(x)["item_id"] for x in (folder / f"audit/{audit}.jsonl").read_text().splitlines()}

    # audit rows go with their key, rows of upstream rows never kept included (a HealthBench prompt's rows together)
    held_keys = {key(i) for i in held}
    for audit, table in (("scope_verdicts", inputs.verdicts), ("accounting", inputs.accounting)):
        ids = set(table["item_id"].to_list())
        assert audit_ids(private, audit) == {i for i in ids if key(i) in held_keys}, audit
        assert audit_ids(public, audit) == {i for i in ids if key(i) not in held_keys}, audit
    for p in public.rglob("*"):
        if p.is_file():
            assert not any(f'"{i}"' in p.read_text() for i in held), p
    cal = {json.loads(x)["prompt_id"] for x in (private / "data/calibration/test.jsonl").read_text().splitlines()}
    assert cal == {held_prompt}
    used = {
        r["criterion_id"]
        for line in (public / "data/open_ended_rubric/test.jsonl").read_text().splitlines()
        for r in json.loads(line).get("rubrics") or []
    }
    criteria = (public / "data/criteria/test.jsonl").read_text().splitlines()
    assert {json.loads(x)["criterion_id"] for x in criteria} == used
    m = json.loads((public / "manifests/manifest.json").read_text())
    pm = json.loads((private / "manifests/manifest.json").read_text())
    assert m["held_out"] == pm["held_out"] and m["held_out"]["salt"] == "salt-a" and m["held_out"]["share"] == 0.3
    assert m["held_out"]["held_out_items"] == len(held) == pm["items"]["total"]
    assert m["items"]["total"] == len(every) - len(held)
    card = (public / "README.md").read_text()
    assert f"{len(held)} of {len(every)} items are held out" in card
    assert "medmcqa (openlifescienceai/medmcqa), medqa_usmle (GBaker/MedQA-USMLE-4-options) sit in many" in card
    import hashlib

    for rel, digest in pm["files"].items():
        assert hashlib.sha256((private / rel).read_bytes()).hexdigest() == digest


def test_share_zero_and_no_rule_write_the_same_bytes(inputs: ReleaseInputs, tmp_path: Path) -> None:
    from mama_pipeline.common.held_out import HeldOutRule

    a = write_release(tmp_path / "a" / "mamabench", inputs)
    b = write_release(tmp_path / "b" / "mamabench", inputs, HeldOutRule(0.0, "x", "item_id"))
    assert a == b and not (tmp_path / "b" / "mamabench-held-out").exists()


def test_card_names_the_graders_circularity_flags_and_says_when_none_are_trained_pools(inputs: ReleaseInputs) -> None:
    from dataclasses import replace

    flag = {
        "judge": "llm.rubric_judge",
        "judge_model": "openai/gpt-oss-120b",
        "part": "systems.gpt",
        "model": "openai/gpt-oss-20b",
        "shared": "family",
        "family": "openai/gpt",
        "note": "circular: llm.rubric_judge (openai/gpt-oss-120b) and systems.gpt (openai/gpt-oss-20b) share "
        "the model family openai/gpt",
    }
    files = release_files(replace(inputs, circularity=[flag]))
    assert json.loads(files["manifests/manifest.json"])["circularity"] == [flag]
    card = files["README.md"].decode()
    assert (
        "- Circular: llm.rubric_judge (openai/gpt-oss-120b) and systems.gpt (openai/gpt-oss-20b) share the model "
        "family openai/gpt: the grades of system gpt (a grader may favour its own model family)."
    ) in card
    plain = release_files(inputs)["README.md"].decode()
    assert "## Circularity" not in plain and "None listed (setting `mamabench.widely_trained_pools`)." in plain


def test_every_listed_track_loads_an_empty_one_is_not_listed_and_the_scoring_snippet_runs(
    inputs: ReleaseInputs, tmp_path: Path, monkeypatch
) -> None:
    import re

    import datasets

    from mama_pipeline_tests.release.test_hub_loading import listed, load_every_listed_config

    no_short_answers = ReleaseInputs(
        **{**inputs.__dict__, "items": inputs.items.filter(pl.col("set_type") != "open_ended")}
    )
    out = tmp_path / "mb"
    write_release(out, no_short_answers)
    card = (out / "README.md").read_text()
    names = [c["config_name"] for c in listed(out)]
    assert "open_ended" not in names and "Not listed, no rows: `open_ended`." in card
    rows = load_every_listed_config(out, tmp_path / "cache")
    assert rows["mcq"] == int((inputs.items["set_type"] == "mcq").sum()) > 0
    # the card's snippet, pointed at this folder, with its placeholder model (always the first option)
    [snippet] = re.findall(r"```python\n(.*?)```", card, re.S)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    scope: dict = {}
    exec(re.sub(r"^folder = .*$", f"folder = {str(out)!r}", snippet, count=1, flags=re.M), scope)
    mcq = [json.loads(line) for line in (out / "data" / "mcq" / "test.jsonl").read_text().splitlines()]
    assert scope["accuracy"] == sum(item["answer_index"] == 0 for item in mcq) / len(mcq)


def test_other_areas_files_are_released_hashed_and_described_in_the_public_folder_only(inputs, tmp_path) -> None:
    from mama_pipeline.common.held_out import HeldOutRule

    board = b'{"benchmark": "mamabench"}\n'
    with_board = replace(
        inputs,
        extra_files={"leaderboard/leaderboard.json": board},
        card_sections=["## Leaderboard\n\nThe leaderboard folder."],
    )
    files = release_files(with_board)
    assert files["leaderboard/leaderboard.json"] == board
    manifest = json.loads(files["manifests/manifest.json"])
    assert manifest["files"]["leaderboard/leaderboard.json"] == hashlib.sha256(board).hexdigest()
    assert "## Leaderboard\n\nThe leaderboard folder." in files["README.md"].decode()
    write_release(tmp_path / "rel" / "9.9.9", with_board, HeldOutRule(0.3, "s", "item_id"))
    assert (tmp_path / "rel" / "9.9.9" / "leaderboard" / "leaderboard.json").read_bytes() == board
    private = tmp_path / "mamabench-held-out" / "9.9.9"
    assert (private / "manifests" / "manifest.json").exists() and not list(private.rglob("leaderboard*"))
