"""Driver of the corpus-change acceptance test, run in its own process (definitions read MAMA_CONFIG at import).

    python -m mama_pipeline_tests.release.corpus_change_driver DEFS_MODULE WORK_DIR FAKE_LLM_URL

Builds the mamaretrieval release from the sample corpus with a dense retriever and a fake LLM
server, rebuilds it from cached answers, then edits one pooled chunk, lets the
corpus-version sensor see the change and runs what it requests (up to the
release). Prints one JSON object with what the test asserts.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
import urllib.request
from pathlib import Path

import dagster as dg
import polars as pl

from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.resources import SettingsResource
from mama_pipeline.run_plan import execute_plan, plan_runs
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import hold_open

RELEASE = dg.AssetKey("mamaretrieval_release")
CHECK_INPUTS = dg.AssetKey("judging_failures")  # read by the check on judgments


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def chat_calls(url: str) -> int:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/stats") as r:
        return json.load(r).get("chat_calls", 0)


def judge_metadata(instance: dg.DagsterInstance, run_ids: list[str]) -> dict[str, int]:
    """new_labels and asked summed over the judged_labels materialisations of these runs."""
    totals = {"new_labels": 0, "asked": 0}
    for run_id in run_ids:
        for record in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records:
            mat = record.event_log_entry.asset_materialization
            if mat.asset_key == dg.AssetKey("judged_labels"):
                for key in totals:
                    totals[key] += int(mat.metadata[key].value)
    return totals


def stage_calls(instance: dg.DagsterInstance, run_ids: list[str], asset: str, key: str) -> int:
    """HTTP calls recorded under metadata ``key`` (or, for ``*suffix``, every key ending in it) by ``asset``'s
    materialisations in these runs."""
    calls = 0
    for run_id in run_ids:
        for record in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records:
            mat = record.event_log_entry.asset_materialization
            if mat.asset_key == dg.AssetKey(asset):
                calls += sum(
                    int(v.value)
                    for k, v in mat.metadata.items()
                    if (k.endswith(key[1:]) if key.startswith("*") else k == key)
                )
    return calls


def edit_pooled_chunk(bundle: Path, store: Store, untiered: set[str]) -> tuple[str, str]:
    """Edit slightly a chunk that tops a ranking by a wide margin (kept in the pool), and its header's CID.

    Not a seed chunk, from an untiered source when one tops a ranking. Returns the (old, new) chunk ids.
    """
    r = store.read_table("rankings").filter(pl.col("rank") <= 2).sort("query_id", "rank")
    margins = r.group_by("query_id", maintain_order=True).agg(
        pl.col("chunk_id").first(), (pl.col("score").first() - pl.col("score").last()).alias("margin")
    )
    chunks = store.read_table("corpus_chunks").join(
        store.read_table("sampled_chunks").select("chunk_id"), on="chunk_id", how="anti"
    )
    chunks = chunks.with_columns(pl.col("source").is_in(untiered).alias("untiered"))
    target = (
        chunks.join(margins, on="chunk_id").sort("untiered", "margin", "chunk_id", descending=True).row(0, named=True)
    )
    text = bundle.read_text()
    header = f"|CID:{target['chunk_id']}]"
    assert text.count(header) == 1 and text.count(target["text"]) == 1, "chunk to edit is not unique in the bundle"
    edited = target["text"] + " Record it."
    bundle.write_text(text.replace(header, f"|CID:{chunk_id(edited)}]").replace(target["text"], edited))
    return target["chunk_id"], chunk_id(edited)


def main(module: str, work: Path, fake_url: str) -> None:
    defs = importlib.import_module(module).defs
    graph = defs.resolve_asset_graph()
    s = load_settings()
    store = Store(s.db_path)
    release_dir = s.data_path / "releases" / "mamaretrieval" / s.release.mamaretrieval_version
    upstream = dg.AssetSelection.assets(RELEASE, CHECK_INPUTS).upstream().resolve(graph)
    out: dict = {}
    (work / "dagster_home").mkdir(exist_ok=True)
    with dg.instance_for_test(temp_dir=str(work / "dagster_home")) as instance:
        first = execute_plan(defs, plan_runs(graph, upstream), instance)
        out["first_runs_ok"] = all(r.success for r in first)
        before = tree_hashes(release_dir)
        calls = chat_calls(fake_url)
        again = execute_plan(defs, plan_runs(graph, upstream), instance)
        out["second_runs_ok"] = all(r.success for r in again)
        after = tree_hashes(release_dir)
        out["release_files"] = len(before)
        out["changed_on_rebuild"] = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        out["calls_on_rebuild"] = chat_calls(fake_url) - calls
        manifest_before = json.loads((release_dir / "manifest.json").read_text())

        def tick(cursor: str | None):
            context = dg.build_sensor_context(
                instance=instance, definitions=defs, cursor=cursor, resources={"settings": SettingsResource()}
            )
            return defs.get_sensor_def("corpus_version_sensor").evaluate_tick(context)

        first_tick = tick(None)
        out["tick_before_edit"] = "SkipReason" if first_tick.skip_message else "RunRequest"
        labels_before = store.read_table("judgment_labels").select("query_id", "chunk_id")
        untiered = set(store.read_table("corpus_chunks")["source"].unique()) - set(s.corpus.tier_of())
        old_id, new_id = edit_pooled_chunk(s.resolve(s.corpus.bundle), store, untiered)
        second_tick = tick(first_tick.cursor)
        out["tick_after_edit"] = "SkipReason" if second_tick.skip_message else "RunRequest"
        [request] = second_tick.run_requests
        requested = (
            set(request.asset_graph_subset.asset_keys)
            if request.requires_backfill_daemon()
            else set(request.asset_selection)
        )
        # what the release is built from and a corpus change can reach (mamabench's pools, which the clinician
        # subset also reads, are not downstream of the corpus and stay as they are)
        affected = upstream & dg.AssetSelection.assets("corpus_chunks").downstream().resolve(graph)

        def has_partitions(key: dg.AssetKey) -> bool:  # submission_scores without a submission has none to request
            partitions = graph.get(key).partitions_def
            return partitions is None or bool(partitions.get_partition_keys(dynamic_partitions_store=instance))

        out["not_requested"] = sorted(
            k.to_user_string() for k in affected - requested if graph.get(k).is_materializable and has_partitions(k)
        )
        calls = chat_calls(fake_url)
        runs = execute_plan(
            defs, plan_runs(graph, requested & upstream), instance, tags={"mama/trigger": "corpus_version_sensor"}
        )
        out["change_runs_ok"] = all(r.success for r in runs)
        out["calls_after_edit"] = chat_calls(fake_url) - calls
        out["judge"] = judge_metadata(instance, [r.run_id for r in runs])
        run_ids = [r.run_id for r in runs]
        out["writer_calls"] = stage_calls(instance, run_ids, "query_gate_decisions", "query_writer/http_calls")
        # the release states the judge reliability: the reference judge (another judge) labels pilot pairs it lacks
        out["reference_calls"] = stage_calls(instance, run_ids, "reference_judgments", "http_calls")
        out["hole_calls"] = stage_calls(instance, run_ids, "variant_holes", "judge/http_calls")
        # the multi-passage track labels its pooled pairs that hold the new chunk: relevance and facts
        out["multipassage_calls"] = stage_calls(instance, run_ids, "multipassage_labels", "http_calls") + stage_calls(
            instance, run_ids, "multipassage_fact_labels", "* facts:judge/http_calls"
        )
        pool_after = store.read_table("pooled_pairs").select("query_id", "chunk_id")
        new_pairs = pool_after.join(labels_before, on=["query_id", "chunk_id"], how="anti")
        out["new_pairs"] = new_pairs.height
        out["new_pairs_with_new_chunk"] = new_pairs.filter(pl.col("chunk_id") == new_id).height
        released = pl.read_parquet(release_dir / "data" / "judgments.parquet")
        out["old_id_released"] = released.filter(pl.col("chunk_id") == old_id).height
        out["new_id_released"] = released.filter(pl.col("chunk_id") == new_id).height
        manifest_after = json.loads((release_dir / "manifest.json").read_text())
        out["corpus_version_changed"] = manifest_after["corpus"]["version"] != manifest_before["corpus"]["version"]
        out["smoke_test"] = manifest_after["smoke_test"]
    print(json.dumps(out))


if __name__ == "__main__":
    work_dir = Path(sys.argv[2])
    # one open database for every run, as `mama-pipeline materialize --executor in_process` holds it: this process
    # is the file's one user, and opening it for each read and write was a third of the test's time
    with hold_open(load_settings().db_path):
        main(sys.argv[1], work_dir, sys.argv[3])
    shutil.rmtree(work_dir / "dagster_home", ignore_errors=True)
