"""The corpus-version sensor and the mamabench sources schedule, evaluated with Dagster's test contexts."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from mama_pipeline.corpus import _watch as watch
from mama_pipeline.corpus.definitions import build_defs as build_corpus_defs
from mama_pipeline.corpus.sensors import TRIGGER_TAG
from mama_pipeline.mamabench.assets import RAW_ASSETS
from mama_pipeline.mamabench.definitions import build_defs as build_mamabench_defs
from mama_pipeline.mamabench.schedules import mamabench_sources_schedule
from mama_pipeline.queries.definitions import build_defs as build_queries_defs
from mama_pipeline.resources import SettingsResource, shared_resources
from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
from mama_pipeline_tests.support.llm_stages import with_embedded

queries_defs = build_queries_defs(load_settings())

PACKAGE = SAMPLE_CONFIG.parent
CORPUS_DOWNSTREAM = {
    "corpus_chunks",
    "corpus_issues",
    "sampled_chunks",
    "sampling_rejections",
    "generated_queries",
    "query_gate_decisions",
}


@pytest.fixture
def sample_copy(tmp_path, monkeypatch) -> Path:
    """The bundled sample config and data in a scratch folder, so tests may edit the inputs."""
    root = tmp_path / "sample"
    shutil.copytree(PACKAGE / "sample_data", root / "sample_data")
    shutil.copy(SAMPLE_CONFIG, root / "config.yaml")
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    return root / "config.yaml"


def sensor_defs(config: Path, *extra: dg.AssetsDefinition) -> dg.Definitions:
    return dg.Definitions.merge(  # the corpus area brings its sensor, built from this configuration
        build_corpus_defs(load_settings(config)),
        queries_defs,
        dg.Definitions(assets=list(extra), resources=shared_resources(str(config))),
    )


def evaluate(defs: dg.Definitions, config: Path, instance: dg.DagsterInstance, cursor: str | None):
    """One tick through Dagster's own evaluation (run requests resolved and validated as the daemon does)."""
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        definitions=defs,
        resources={"settings": SettingsResource(config_path=str(config))},
    )
    tick = defs.get_sensor_def("corpus_version_sensor").evaluate_tick(context)
    if tick.skip_message:
        return dg.SkipReason(tick.skip_message), tick.cursor
    [request] = tick.run_requests
    return request, tick.cursor


def edit_one_chunk(config: Path) -> None:
    bundle = config.parent / "sample_data" / "corpus" / "chunks_for_rag.txt"
    text = bundle.read_text()
    bundle.write_text(text.replace("haemorrhage", "hemorrhage", 1))
    assert bundle.read_text() != text


def test_sensor_requests_the_corpus_and_everything_downstream_when_the_bundle_changes(sample_copy):
    defs = sensor_defs(sample_copy)
    with dg.instance_for_test() as instance:
        first, cursor = evaluate(defs, sample_copy, instance, None)
        assert isinstance(first, dg.SkipReason) and "baseline" in first.skip_message
        assert cursor.startswith("sha256:")
        same, cursor2 = evaluate(defs, sample_copy, instance, cursor)
        assert isinstance(same, dg.SkipReason) and "unchanged" in same.skip_message and cursor2 == cursor
        edit_one_chunk(sample_copy)
        request, cursor3 = evaluate(defs, sample_copy, instance, cursor)
        assert isinstance(request, dg.RunRequest) and cursor3 != cursor
        assert {k.to_user_string() for k in request.asset_selection} == CORPUS_DOWNSTREAM
        assert request.tags[TRIGGER_TAG] == "corpus_version_sensor"
        assert request.tags["mama/corpus_fingerprint"] == cursor3
        again, _ = evaluate(defs, sample_copy, instance, cursor3)
        assert isinstance(again, dg.SkipReason)


def test_without_a_cursor_the_latest_corpus_materialisation_is_the_baseline(sample_copy):
    defs = sensor_defs(sample_copy)
    with dg.instance_for_test() as instance:
        job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("corpus_chunks")])
        assert job.execute_in_process(
            instance=instance, asset_selection=[dg.AssetKey("corpus_chunks"), dg.AssetKey("corpus_issues")]
        ).success
        unchanged, _ = evaluate(defs, sample_copy, instance, None)
        assert isinstance(unchanged, dg.SkipReason) and "unchanged" in unchanged.skip_message
        edit_one_chunk(sample_copy)  # edited while the sensor was off
        request, _ = evaluate(defs, sample_copy, instance, None)
        assert isinstance(request, dg.RunRequest)


def test_partitioned_downstream_assets_turn_the_request_into_a_backfill(sample_copy):
    shards = dg.StaticPartitionsDefinition(["0", "1"])

    @dg.asset(partitions_def=shards, deps=["generated_queries"])
    def judged_shard() -> None:
        return None

    defs = sensor_defs(sample_copy, judged_shard)
    dg.Definitions.validate_loadable(defs)  # as a code server loads it: the sensor's selection spans partitions
    with dg.instance_for_test() as instance:
        _, cursor = evaluate(defs, sample_copy, instance, None)
        edit_one_chunk(sample_copy)
        request, _ = evaluate(defs, sample_copy, instance, cursor)
    assert request.requires_backfill_daemon()
    subset = request.asset_graph_subset
    assert {k.to_user_string() for k in subset.asset_keys} == CORPUS_DOWNSTREAM | {"judged_shard"}
    assert set(subset.get_partitions_subset(dg.AssetKey("judged_shard")).get_partition_keys()) == {"0", "1"}


def test_hub_bundle_is_watched_by_revision_commit(sample_copy, monkeypatch):
    config = sample_copy.parent / "hub.yaml"
    config.write_text(
        with_embedded(
            sample_copy.read_text().replace(
                "bundle: sample_data/corpus/chunks_for_rag.txt",
                "bundle: hf://datasets/org/corpus@main/chunks_for_rag.txt",
            )
        )
    )
    commits = {"main": "a" * 40}
    asked = []

    def fake_commit(repo_type, repo_id, revision):
        asked.append((repo_type, repo_id, revision))
        return commits[revision]

    monkeypatch.setattr(watch, "hub_commit", fake_commit)
    defs = sensor_defs(config)
    with dg.instance_for_test() as instance:
        _, cursor = evaluate(defs, config, instance, None)
        assert cursor == "commit:" + "a" * 40
        skip, _ = evaluate(defs, config, instance, cursor)
        assert isinstance(skip, dg.SkipReason)
        commits["main"] = "b" * 40  # the branch moved
        request, cursor = evaluate(defs, config, instance, cursor)
    assert isinstance(request, dg.RunRequest) and cursor == "commit:" + "b" * 40
    assert asked[0] == ("dataset", "org/corpus", "main")


def test_schedule_requests_mamabench_only_when_an_upstream_file_changed(sample_copy):
    medqa = sample_copy.parent / "sample_data" / "upstream" / "medqa_usmle" / "us_4_options_test-sample-150.jsonl"
    # written in the user's file, the path resolves against the copy (the bundled default would name the package's)
    sample_copy.write_text(
        sample_copy.read_text().replace(
            "mamabench:\n",
            f"mamabench:\n  sources:\n    medqa_usmle: {{path: {medqa.relative_to(sample_copy.parent)}}}\n",
            1,
        )
    )
    settings = SettingsResource(config_path=str(sample_copy))
    repository = dg.Definitions.merge(
        build_mamabench_defs(load_settings(sample_copy)), dg.Definitions(resources=shared_resources(str(sample_copy)))
    ).get_repository_def()
    with dg.instance_for_test() as instance:

        def tick():
            # closed here: the context opens its own instance from the test's, and one left open would reset
            # Dagster's current defs-state storage to a gone instance's when collected, in a later test
            with dg.build_schedule_context(
                instance=instance, resources={"settings": settings}, repository_def=repository
            ) as context:
                return mamabench_sources_schedule(load_settings(sample_copy))(context)

        never = tick()
        assert isinstance(never, dg.RunRequest)  # nothing materialised yet: every pool counts as changed
        assert dg.materialize(RAW_ASSETS, resources=shared_resources(str(sample_copy)), instance=instance).success
        skip = tick()
        assert isinstance(skip, dg.SkipReason) and "unchanged" in skip.skip_message
        medqa.write_bytes(medqa.read_bytes() + b"\n")
        request = tick()
    assert isinstance(request, dg.RunRequest)
    assert request.tags["mama/changed_sources"] == "medqa_usmle"
    # the changed pool's source (observed in the run), its raw rows and what depends on them; no other pool's rows
    assert {k.to_user_string() for k in request.asset_selection} == {
        "mamabench_source_medqa_usmle",
        "mamabench_raw_medqa_usmle",
        "mamabench_adapted",
        "mamabench_accounting",
        "mamabench_scope_verdicts",
        "healthbench_scope_verdicts",
        "mamabench_items",
        "mamabench_provenance",
        "mamabench_criteria",
        "mamabench_yield",
        "mamabench_agreement",
        "mamabench_kenya_parity",
    }


def test_hub_sources_compare_revision_commits():
    assert watch.recorded_fingerprints({"revision": "c" * 40, "sha256": {"x.parquet": "f" * 64}}) == {
        "revision": "c" * 40
    }
    assert watch.recorded_fingerprints({"revision": None, "sha256": {"x.parquet": "f" * 64}}) == {"x.parquet": "f" * 64}
    current = {"a": {"revision": "c" * 40}, "b": {"x.csv": "1"}, "c": {"y.csv": "2"}}
    recorded = {"a": {"revision": "c" * 40}, "b": {"x.csv": "0"}, "c": None}
    assert watch.changed_sources(current, recorded) == ["b", "c"]


def test_the_sensor_interval_and_the_sources_cron_come_from_their_areas_sections(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded("corpus: {sensor_interval_s: 45}\nmamabench: {sources_cron: '15 4 * * 1'}\n"))
    s = load_settings(config)
    assert [d.minimum_interval_seconds for d in build_corpus_defs(s).sensors] == [45]
    assert [d.cron_schedule for d in build_mamabench_defs(s).schedules] == ["15 4 * * 1"]
