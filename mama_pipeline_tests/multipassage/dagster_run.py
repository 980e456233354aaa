"""Materialise the corpus and multipassage groups, then the mamaretrieval release with the track's configuration,
in a fresh process (partitions come from MAMA_CONFIG at import).

Usage: ``MAMA_CONFIG=cfg.yaml python -m mama_pipeline_tests.multipassage.dagster_run OUT.json [ROUNDS]``.
The release's own inputs (queries, rankings, pooled pairs, labels of the single-chunk track) are small
hand-made tables over the real corpus chunks, stored before the first round. Writes each step's
success, check results and materialisation metadata as JSON; ROUNDS (default 1) repeats the whole
sequence (a second round shows what is reused).
"""

import json
import sys

import dagster as dg
import polars as pl

from mama_pipeline.corpus.definitions import build_defs as build_corpus_defs
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.multipassage.definitions import build_defs as build_multipassage_defs
from mama_pipeline.queries._query_prompt import query_writer_template
from mama_pipeline.release.assets import mamaretrieval_release
from mama_pipeline.release.checks import mamaretrieval_release_verifies
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import PipelineSettings, load_settings
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import hold_open
from mama_pipeline_tests.release import fixtures as release_fx

corpus_defs = build_corpus_defs(load_settings())
defs = build_multipassage_defs(load_settings())

MAIN_INPUTS = [
    dg.AssetSpec(k)
    for k in ("generated_queries", "judgments", "pooled_pairs", "rankings", "query_gate_decisions", "judge_reliability")
]


def store_release_inputs(s: PipelineSettings) -> None:
    """Two single-chunk queries over the stored corpus, every pooled retriever's ranking of them, and their labels."""
    store = Store(s.db_path)
    chunks = store.read_table("corpus_chunks").sort("chunk_id")
    seeds = chunks.head(2)
    writer = query_writer_template(s.queries.max_words, s.llm.query_writer.reasoning == "json_field")
    queries = seeds.select(
        query_id=pl.format("q_{}", pl.int_range(1, 3).cast(pl.String).str.zfill(5)),
        query_text=pl.format("What does {} say?", pl.col("source")),
        seed_chunk_id="chunk_id",
        source="source",
        tier=pl.lit("high"),
        model=pl.lit("fake-model"),
        prompt_hash=pl.lit(writer.hash),
        temperature=pl.lit(0.0),
        corpus_version="corpus_version",
    )
    depth = s.retrieval.pool_depth
    rows = [
        (q, r, rank, c, 1.0 / rank)
        for q in queries["query_id"]
        for r in s.retrieval.pooled
        for rank, c in enumerate(chunks["chunk_id"].head(depth), start=1)
    ]
    rankings = pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "retriever": pl.String,
            "rank": pl.Int32,
            "chunk_id": pl.String,
            "score": pl.Float64,
        },
        orient="row",
    )
    pairs = rankings.select("query_id", "chunk_id").unique().sort("query_id", "chunk_id")
    judge_hash = label_prompt_hash(RELEVANCE_JUDGE, output_model(s.llm.judge.reasoning))
    store.write_table("generated_queries", queries)
    for retriever in s.retrieval.pooled:
        store.write_table("rankings", rankings.filter(pl.col("retriever") == retriever), partition=retriever)
    store.write_table(
        "pooled_pairs",
        pairs.with_columns(
            retrievers=pl.Series([sorted(s.retrieval.pooled)] * pairs.height),
            best_rank=pl.lit(1),
            is_seed=pl.lit(False),
            pool_size=pl.lit(depth),
        ),
    )
    store.write_table(
        "judgments",
        release_fx.judgments(pairs).with_columns(
            prompt_hash=pl.lit(judge_hash), corpus_version=pl.lit(chunks["corpus_version"][0])
        ),
    )
    store.write_table("query_gate_decisions", release_fx.gate_decisions())
    store.write_table("judge_reliability", release_fx.reliability())


def main(out_path: str, rounds: int = 1) -> None:
    assets = [*corpus_defs.assets, *defs.assets, *MAIN_INPUTS, mamaretrieval_release]
    checks = [*defs.asset_checks, mamaretrieval_release_verifies]
    resources = shared_resources()
    report: dict = {"steps": []}

    def run(selection, partition=None):
        result = dg.materialize(
            [*assets, *checks], resources=resources, selection=selection, partition_key=partition, raise_on_error=False
        )
        step = {
            "selection": str(selection),
            "partition": partition,
            "success": result.success,
            "checks": {c.check_name: c.passed for c in result.get_asset_check_evaluations()},
            "metadata": {},
        }
        for mat in result.get_asset_materialization_events():
            m = mat.materialization
            step["metadata"][m.asset_key.to_user_string()] = {k: str(v.value) for k, v in m.metadata.items()}
        if not result.success:
            step["errors"] = [
                str(e.event_specific_data.error)[:4000]
                for e in result.all_events
                if e.is_failure and getattr(e.event_specific_data, "error", None)
            ]
        report["steps"].append(step)

    def checked(*names):
        return dg.AssetSelection.assets(*names) | dg.AssetSelection.checks_for_assets(*names)

    for round_ in range(rounds):
        run(dg.AssetSelection.assets("corpus_chunks", "corpus_issues", "sampled_chunks", "sampling_rejections"))
        if round_ == 0:
            store_release_inputs(load_settings())
        run(checked("multipassage_candidates", "multipassage_decisions", "multipassage_questions"))
        for name in load_settings().retrieval.retriever_names:
            run(dg.AssetSelection.assets("multipassage_rankings"), name)
        run(
            checked(
                "multipassage_pool",
                "multipassage_labels",
                "multipassage_fact_labels",
                "multipassage_scoreboard",
                "multipassage_per_query",
                "multipassage_significance",
                "multipassage_report",
            )
        )
        run(checked("mamaretrieval_release"))
    with open(out_path, "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    with hold_open(load_settings().db_path):  # this process is the file's one user, as in-process materialize
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
