"""The systems group with a held-out share: public vs held-out scores per system and track, the graders'
circularity flags in the scoreboard's metadata and the report, and the widely-trained pools named in the report."""

from __future__ import annotations

import hashlib

import dagster as dg
import pytest
import yaml

from mama_pipeline.partitions import partitioned
from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline.systems import held_out_assets
from mama_pipeline.systems.assets import ASSETS, PARTITIONED
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.systems.fixtures import chunks_frame, criteria_frame, harness_frame, items_frame, mcq
from mama_pipeline_tests.systems.test_assets import CLOSED, write_config

SALT = "split-test"


def _held(item_id: str) -> bool:
    return int(hashlib.sha256(f"{SALT}:{item_id}".encode()).hexdigest()[:16], 16) / 16**16 < 0.5


LETTERS = "ABCD"
# mc-i answers "A" (correct, key 0) when i is even, "B" (wrong) when odd
ITEMS = [
    mcq(f"mc-{i}", f'Question {i} [[answer:{{"answer": "{"A" if i % 2 == 0 else "B"}"}}]]', ["w", "x", "y", "z"], 0)
    for i in range(12)
]
SCORES = {f"mc-{i}": 1.0 if i % 2 == 0 else 0.0 for i in range(12)}


def _materialise(config: str, select: str, partition: str | None = None):
    @dg.asset(key="mamabench_items")
    def stub_items():
        return items_frame(ITEMS)

    @dg.asset(key="mamabench_criteria")
    def stub_criteria():
        return criteria_frame([])

    @dg.asset(key="corpus_chunks")
    def stub_chunks():
        return chunks_frame()

    @dg.asset(key="calibration_harness_report")
    def stub_harness():
        return harness_frame()

    closed = dg.StaticPartitionsDefinition(["closed"])
    assets = [partitioned([a], closed)[0] if a in PARTITIONED else a for a in ASSETS]
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [stub_items, stub_criteria, stub_chunks, stub_harness, *assets, *held_out_assets.ASSETS],
            resources=shared_resources(config),
            selection=dg.AssetSelection.assets(*select.split()),
            partition_key=partition,
            instance=instance,
            raise_on_error=True,
        )


def test_held_out_gap_per_system_and_track_and_the_graders_flags(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm.url, [{**CLOSED, "tracks": ["mcq"]}])
    raw = yaml.safe_load(open(config))
    raw["release"] = {"held_out": {"share": 0.5, "salt": SALT}}
    raw["llm"]["answer_grader"]["model"] = "fake-a"  # the grader shares the system's model
    open(config, "w").write(yaml.safe_dump(with_embedded(raw)))
    _materialise(config, "mamabench_items mamabench_criteria corpus_chunks calibration_harness_report systems_items")
    _materialise(config, "system_answers system_grades", "closed")
    result = _materialise(config, "system_scoreboard system_comparisons systems_report system_held_out_scoreboard")

    held = [i for i in SCORES if _held(i)]
    public = [i for i in SCORES if not _held(i)]
    assert len(held) >= 2 and len(public) >= 2
    board = Store(tmp_path / "data" / "mama.duckdb").read_table("system_held_out_scoreboard")
    row = board.row(0, named=True)
    assert board.height == 1 and (row["system"], row["track"]) == ("closed", "mcq")
    mean_public = sum(SCORES[i] for i in public) / len(public)
    mean_held = sum(SCORES[i] for i in held) / len(held)
    assert (row["n_public"], row["n_held_out"]) == (len(public), len(held))
    assert row["mean_public"] == pytest.approx(mean_public) and row["mean_held_out"] == pytest.approx(mean_held)
    assert row["gap"] == pytest.approx(mean_public - mean_held) and 0 < row["p_permutation"] <= 1
    assert "independent" in row["test"]

    meta = {
        k: v.value
        for e in result.get_asset_materialization_events()
        for k, v in e.materialization.metadata.items()
        if e.asset_key == dg.AssetKey("system_scoreboard")
    }
    assert "| llm.answer_grader | fake-a | systems.closed | fake-a | model |" in meta["circularity"]
    page = (tmp_path / "data" / "reports" / "systems" / "systems.html").read_text()
    assert (
        "Circular: the answer grader (fake-a) and system closed (fake-a) share the model: the grades of system closed"
        in page
    )
    assert "Pools widely used for training: medmcqa, medqa_usmle" in page
    assert "<h4>by pool</h4>" in page and "<td>medmcqa</td>" in page  # the items' pool scored on its own
    # the report shows both parts with their n, the gap and the test, as the held-out scoreboard has them
    section = page.split("<h2>Public and held-out parts</h2>")[1].split("<h2>")[0]
    assert (
        f"<td>closed</td><td>mcq</td><td>{mean_public:.3f}</td><td>{len(public)}</td><td>{mean_held:.3f}</td>"
        f"<td>{len(held)}</td><td>{len(public)}</td><td>{len(held)}</td><td>{mean_public - mean_held:.3f}</td>"
        f"<td>{row['p_permutation']:.3f}</td>"
    ) in section
    assert "share 0.5" in section and "independent" in section and "cannot be paired" in section
    # one system: no other to pair with on the items, said so rather than a relative gap
    assert row["relative_gap"] is None and "no other system scored on the same items" in section
