"""Dagster assets of the releases, thin over the pure modules: the last stage, reading every area it publishes.

``mamaretrieval_release`` and ``release_publication`` (group ``release``) read ``corpus_chunks``,
``generated_queries``, ``rankings`` (from the store, for the pooled retrievers), ``pooled_pairs``, ``judgments``
and the tracks' parts (:mod:`mama_pipeline.release._track_parts`); ``mamabench_release`` (group ``mamabench``, the
benchmark's last asset) reads mamabench's tables and the calibration side-file.
"""

import json
import subprocess
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from mama_pipeline.circularity import RELEVANCE_JUDGE as JUDGE_STAGE
from mama_pipeline.circularity import circularity_flags, flag_record, system_flags
from mama_pipeline.common.held_out import held_out_path
from mama_pipeline.judging import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.llm.failure_bounds import (
    FailureBoundError,
    classifier_failures,
    judge_failures,
    query_writer_failures,
    reference_classifier_failures,
    refuse_over_bound,
)
from mama_pipeline.llm.reference_audit import decoding_text, reference_judge_stages
from mama_pipeline.mamabench import SCOPE_TEMPLATE, agreement_stats, classifier_agreement, classifier_audit
from mama_pipeline.queries import answer_model, query_writer_template
from mama_pipeline.release._leaderboard_part import mamabench_files
from mama_pipeline.release._mamabench import write_release
from mama_pipeline.release._mamabench_inputs import ClassifierInfo, ReleaseInputs
from mama_pipeline.release._mamaretrieval import (
    NAME,
    CorpusInfo,
    MamaretrievalInputs,
    PromptInfo,
    write_mamaretrieval_release,
)
from mama_pipeline.release._publish import publish_release
from mama_pipeline.release._sorted_tables import SortedTables, StoredTable, columns_of
from mama_pipeline.release._track_parts import EXTRA_ASSETS, extra_configurations, mamaretrieval_parts, part_assets
from mama_pipeline.resources import SettingsResource, StoreResource, scratch_path
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

GROUP = "release"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "mamaretrieval_release": "circularity clinician.min_annotations clinician.release_synthetic_labels corpus.bundle corpus.canonical_text evaluation judging llm multipassage queries.max_words release retrieval.include_seed_chunk retrieval.pool_depth retrieval.pooled retrieval.retrievers robustness systems.entries",
    "mamabench_release": "circularity clinician.min_annotations clinician.release_synthetic_labels llm mamabench.agreement_pools mamabench.agreement_sample_size mamabench.agreement_seed mamabench.widely_trained_pools release retrieval.retrievers systems",
    "release_publication": "release.mamabench_version release.mamaretrieval_version release.publish",
}
MAMABENCH_GROUP = "mamabench"
CALIBRATION_SIDE_FILE = dg.AssetKey("calibration_side_file")
CORPUS = dg.AssetKey("corpus_chunks")
RANKINGS = dg.AssetKey("rankings")
MAMABENCH_RELEASE = dg.AssetKey("mamabench_release")
MAMABENCH_LEADERBOARD = dg.AssetKey("mamabench_leaderboard")  # its folder is released as leaderboard/
REPO_ROOT = Path(__file__).resolve().parents[2]
EMBEDDED_PREFIX = "embedded:"  # judge_endpoint of labels made by the embedded smoke-test server


def _latest_metadata(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return {}
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def producer() -> dict[str, Any]:
    """The code that built a release: package version and, in a git checkout, the commit."""
    try:
        version = importlib_metadata.version("mama_pipeline")
    except importlib_metadata.PackageNotFoundError:
        version = None
    commit = None
    if (REPO_ROOT / ".git").exists():
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        commit = (out.stdout.strip() or None) if out.returncode == 0 else None
    return {"package": "mama_pipeline", "version": version, "git_commit": commit}


def judge_endpoints(store: Store) -> list[str]:
    """The endpoints the stored labels were made at (none when the table does not record them)."""
    if "judge_endpoint" not in columns_of(StoredTable(store, "judgments")):
        return []
    found = store.query("SELECT DISTINCT judge_endpoint FROM judgments WHERE judge_endpoint IS NOT NULL")
    return sorted(found.get_column("judge_endpoint").to_list())


def prompt_infos(s: PipelineSettings, queries: pl.DataFrame, endpoints: list[str]) -> tuple[PromptInfo, PromptInfo]:
    """The shipped prompts of the query writer and the judge, with whether the smoke-test model answered
    (``endpoints``: those the labels were made at)."""
    qw = s.llm.query_writer
    writer_template = query_writer_template(s.queries.max_words, qw.reasoning == "json_field")
    writer_model = answer_model(qw.reasoning == "json_field")
    writer_smoke = qw.embedded or bool((queries.get_column("model") == s.llm.embedded_server.model_alias).any())
    jc = s.llm.judge
    judge_model = output_model(jc.reasoning)
    judge_smoke = jc.embedded or any(e.startswith(EMBEDDED_PREFIX) for e in endpoints)
    writer = PromptInfo(
        writer_template, writer_model.model_json_schema(), writer_template.hash, qw.temperature, writer_smoke
    )
    judge = PromptInfo(
        RELEVANCE_JUDGE,
        judge_model.model_json_schema(),
        label_prompt_hash(RELEVANCE_JUDGE, judge_model),
        jc.temperature,
        judge_smoke,
    )
    return writer, judge


def _asked_pairs(store: Store, inputs: MamaretrievalInputs) -> pl.LazyFrame:
    """The pooled pairs the judge was asked about: all of them, less those adaptive judging left unjudged."""
    pool = inputs.frame("pooled_pairs")
    if not store.table_exists("judged_labels"):
        return pool
    unjudged = store.query("SELECT query_id, chunk_id FROM judged_labels WHERE status = 'unjudged'")
    return pool.join(unjudged.lazy(), on=["query_id", "chunk_id"], how="anti")


def judging_record(s: PipelineSettings, store: Store) -> dict[str, Any]:
    """How the labels were chosen, for the manifest: the strategy and, under adaptive, the method, the budget, the
    pairs asked, the judged share and the estimated recall of the labels (unjudged_estimate) per scope and cut."""
    j = s.judging
    if j.strategy == "full":
        return {"strategy": "full", "note": "every pooled pair was asked (the paper's protocol)"}
    for table in ("judged_set", "unjudged_estimate"):
        if not store.table_exists(table):
            raise ValueError(f"judging.strategy adaptive: table {table!r} is not in {store.path}; materialise it")
    asked = store.query("SELECT role, count(*) AS n FROM judged_set GROUP BY role ORDER BY role")
    by_role = dict(asked.iter_rows())
    pool = store.query("SELECT count(*) AS n FROM pooled_pairs")["n"].item()
    estimate = store.read_table("unjudged_estimate")

    def rounded(v: float | None) -> float | None:
        return None if v is None else round(v, 4)

    recall: dict[str, dict[str, dict[str, Any]]] = {}
    for r in estimate.iter_rows(named=True):
        recall.setdefault(r["scope"], {})[r["cut"]] = {
            "recall": rounded(r["recall"]),
            "low": rounded(r["recall_low"]),
            "high": rounded(r["recall_high"]),
            "confidence": r["confidence"],
            "relevant_labelled": r["relevant_labelled"],
            "sample_pairs": r["sample_pairs"],
            "refused": r["note"],
        }
    asked_n = by_role.get("round", 0) + by_role.get("sample", 0)
    return {
        "strategy": "adaptive",
        "method": j.method,
        "budget": j.budget,
        "budget_pairs": j.budget_pairs(pool),
        "stop_yield": j.stop_yield,
        "pairs_asked_by_rounds": by_role.get("round", 0),
        "remainder_sample_pairs": by_role.get("sample", 0),
        "judged_share": round(asked_n / pool, 4) if pool else None,
        "estimated_recall": recall,
        "note": "pooled pairs left unjudged are not labels (absent from judgments), never non-relevant",
    }


def mamaretrieval_inputs(
    s: PipelineSettings,
    corpus_meta: dict[str, Any],
    store: Store,
    queries: pl.DataFrame,
    sorted_tables: SortedTables,
    reliability: pl.DataFrame | None = None,
) -> MamaretrievalInputs:
    """The release's inputs: the corpus, rankings, labels and pooled pairs as stored tables (sorted in
    ``sorted_tables``), the queries as materialised."""
    r, rel = s.retrieval, s.release
    writer, judge = prompt_infos(s, queries, judge_endpoints(store))
    commit = corpus_meta.get("bundle_commit")
    return MamaretrievalInputs(
        version=rel.mamaretrieval_version,
        previous_version=rel.mamaretrieval_previous_version,
        licence=rel.licence,
        chunks=StoredTable(store, CORPUS.path[-1]),
        queries=queries,
        rankings=StoredTable(store, RANKINGS.path[-1], tuple(r.pooled)),
        judgments=StoredTable(store, "judgments"),
        pooled_pairs=StoredTable(store, "pooled_pairs"),
        corpus=CorpusInfo(
            source=s.corpus.bundle,
            commit=commit if commit and commit != "(local file)" else None,
            bundle_sha256=corpus_meta.get("bundle_sha256"),
            canonical_text=s.corpus.canonical_text,
        ),
        query_writer=writer,
        judge=judge,
        retrievers=[x.model_dump(mode="json") for x in r.retrievers if x.name in r.pooled],
        pool_depth=r.pool_depth,
        include_seed_chunk=r.include_seed_chunk,
        lenient=s.judging.lenient_cut,
        strict=s.judging.strict_cut,
        producer=producer(),
        reliability=reliability,
        reference_decoding={stage: decoding_text(s.llm, stage) for stage in reference_judge_stages(s.llm)},
        circularity=[flag_record(f) for f in circularity_flags(s) if f.judge == JUDGE_STAGE],
        judging=judging_record(s, store),
        sorted_tables=sorted_tables,
        embedded_stages=embedded_stages_of(s, "mamaretrieval"),
    )


MAMARETRIEVAL_STAGES = (
    "query_writer",
    "judge",
    "reference_judge",
    "cross_model_judge",
    "query_rewriter",
    "rewrite_gate",
)
MAMABENCH_STAGES = ("classifier", "classifier_reference", "rubric_judge", "answer_grader")


def embedded_stages_of(s: PipelineSettings, release: str) -> list[str]:
    """The stages that feed ``release`` and that the configuration serves with the embedded smoke-test model
    (mamabench: with every answering system)."""
    if release == "mamaretrieval":
        names = {*MAMARETRIEVAL_STAGES, s.multipassage.writer_stage, s.multipassage.verifier_stage}
        return [k for k in s.embedded_stages() if k.removeprefix("llm.") in names and k.startswith("llm.")]
    return [k for k in s.embedded_stages() if k.startswith("systems.") or k.removeprefix("llm.") in MAMABENCH_STAGES]


@dg.asset(
    group_name=GROUP,
    ins={
        "queries": dg.AssetIn("generated_queries"),
        "gate_decisions": dg.AssetIn("query_gate_decisions"),
        "reliability": dg.AssetIn("judge_reliability"),
    },
    deps=[CORPUS, RANKINGS, "judgments", "pooled_pairs", "unjudged_estimate", *part_assets()],
    description="The mamaretrieval release folder (hub dataset layout: parquet data, audit, manifest, card) "
    "under <data_dir>/releases/mamaretrieval/<version>; refused when a ranking or label names a chunk outside "
    "the corpus version, or when an LLM stage (query_writer, judge) failed more often than its "
    "llm.<stage>.max_failure_rate.",
)
def mamaretrieval_release(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    queries: pl.DataFrame,
    gate_decisions: pl.DataFrame,
    reliability: pl.DataFrame,
) -> dg.MaterializeResult:
    s = settings.get()
    folder = s.release_path(NAME, s.release.mamaretrieval_version)
    with SortedTables(scratch_path(settings)) as sorted_tables:
        inputs = mamaretrieval_inputs(
            s, _latest_metadata(context.instance, CORPUS), store.get(), queries, sorted_tables, reliability
        )
        stages = [
            query_writer_failures(gate_decisions, s.llm.query_writer.max_failure_rate),
            judge_failures(_asked_pairs(store.get(), inputs), inputs.frame("judgments"), s.llm.judge.max_failure_rate),
        ]
        try:
            refuse_over_bound(NAME, s.release.mamaretrieval_version, stages)
        except FailureBoundError as exc:
            raise dg.Failure(str(exc), metadata={k: v for st in stages for k, v in st.metadata().items()}) from None
        parts = mamaretrieval_parts(s, store.get(), inputs)
        manifest = write_mamaretrieval_release(folder, inputs, parts, s.release.held_out.rule("query_id"))
    context.log.info(f"mamaretrieval {inputs.version} written to {folder}")
    held = (
        {
            "held_out": dg.MetadataValue.json(manifest["held_out"]),
            "held_out_path": dg.MetadataValue.path(str(held_out_path(folder, NAME))),
        }
        if "held_out" in manifest
        else {}
    )
    f = manifest["figures"]
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(folder)),
            "version": inputs.version,
            "corpus_version": manifest["corpus"]["version"],
            "smoke_test": manifest["smoke_test"],
            "files": len(manifest["files"]),
            "queries": f["queries"],
            "judged_pairs": f["judged_pairs"],
            "rankings": f["rankings"],
            "chunks": f["chunks"],
            "queries_without_strict_chunk": f["queries_without_strict_chunk"],
            **{k: v for st in stages for k, v in st.metadata().items()},
            **held,
            "manifest": dg.MetadataValue.json({k: v for k, v in manifest.items() if k != "files"}),
        }
    )


@dg.asset(
    group_name=GROUP,
    deps=[mamaretrieval_release, MAMABENCH_RELEASE],
    description="Both release folders pushed to their hub dataset repos (one commit each, tagged with the "
    "version) when release.publish.enabled; otherwise a dry run recording the operations it would send.",
)
def release_publication(context: dg.AssetExecutionContext, settings: SettingsResource) -> dg.MaterializeResult:
    s = settings.get()
    p, rel = s.release.publish, s.release
    mamabench_path = _latest_metadata(context.instance, MAMABENCH_RELEASE).get("path")
    targets = [
        (NAME, s.release_path(NAME, rel.mamaretrieval_version), rel.mamaretrieval_version, p.mamaretrieval_repo_id),
        ("mamabench", Path(mamabench_path) if mamabench_path else None, rel.mamabench_version, p.mamabench_repo_id),
    ]
    meta: dict[str, Any] = {"dry_run": not p.enabled}
    for name, folder, version, repo_id in targets:
        if folder is None:
            raise dg.Failure(f"{name}: no release folder recorded; materialise {name}_release first")
        if repo_id is None and p.enabled:
            context.log.info(f"{name}: release.publish.{name}_repo_id is unset; not published")
            meta[f"{name}/published"] = False
            continue
        outcome = publish_release(
            folder, name, version, repo_id or f"<release.publish.{name}_repo_id>", p, log=context.log.info
        )
        meta[f"{name}/folder"] = dg.MetadataValue.path(str(folder))
        meta[f"{name}/operations"] = dg.MetadataValue.json(json.loads(json.dumps(outcome.operations)))
        if outcome.commit_url:
            meta[f"{name}/commit"] = dg.MetadataValue.url(outcome.commit_url)
        meta[f"{name}/published"] = not outcome.dry_run
    return dg.MaterializeResult(metadata=meta)


@dg.asset(
    group_name=MAMABENCH_GROUP,
    ins={
        "items": dg.AssetIn("mamabench_items"),
        "criteria": dg.AssetIn("mamabench_criteria"),
        "accounting": dg.AssetIn("mamabench_accounting"),
        "verdicts": dg.AssetIn("mamabench_scope_verdicts"),
        "yields": dg.AssetIn("mamabench_yield"),
        "provenance": dg.AssetIn("mamabench_provenance"),
        "agreement": dg.AssetIn("mamabench_agreement"),
        "parity": dg.AssetIn("mamabench_kenya_parity"),
        "calibration": dg.AssetIn(CALIBRATION_SIDE_FILE),
    },
    deps=[*EXTRA_ASSETS, MAMABENCH_LEADERBOARD],
    description="The mamabench release folder (hub dataset layout) under <data_dir>/releases/mamabench/<version>; "
    "refused when the classifier or the reference classifier failed more often than llm.<stage>.max_failure_rate.",
)
def mamabench_release(settings: SettingsResource, **tables: pl.DataFrame) -> dg.MaterializeResult:
    s = settings.get()
    stages = [
        classifier_failures(tables["verdicts"], s.llm.classifier.max_failure_rate),
        reference_classifier_failures(tables["agreement"], s.llm.classifier_reference.max_failure_rate),
    ]
    try:
        refuse_over_bound("mamabench", s.release.mamabench_version, stages)
    except FailureBoundError as exc:
        raise dg.Failure(str(exc), metadata={k: v for st in stages for k, v in st.metadata().items()}) from None
    out_dir = s.release_path("mamabench", s.release.mamabench_version)
    inputs = mamabench_inputs(
        tables,
        s.release.mamabench_version,
        s.mamabench.agreement_pools,
        s.mamabench.agreement_sample_size,
        s.mamabench.agreement_seed,
    )
    inputs.extra = extra_configurations("mamabench", StoreResource(settings=settings).get(), s)
    inputs.extra_files, inputs.card_sections = mamabench_files(s, StoreResource(settings=settings).get())
    inputs.widely_trained = s.mamabench.widely_trained_pools
    inputs.circularity = [flag_record(f) for f in system_flags(s)]
    inputs.embedded_stages = embedded_stages_of(s, "mamabench")
    rule = s.release.held_out.rule("item_id")
    hashes = write_release(out_dir, inputs, rule)
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(out_dir)),
            "files": len(hashes),
            "items": inputs.items.height,
            "manifest_sha256": hashes["manifests/manifest.json"],
            **(
                {
                    "held_out_path": dg.MetadataValue.path(str(held_out_path(out_dir, "mamabench"))),
                    "held_out_share": rule.share,
                }
                if rule.active
                else {}
            ),
            **{k: v for st in stages for k, v in st.metadata().items()},
        }
    )


def mamabench_inputs(
    tables: dict[str, pl.DataFrame], version: str, pools: list[str], size: int, seed: int
) -> ReleaseInputs:
    """Assemble the writer's inputs from the stored tables."""
    verdicts = tables["verdicts"]
    classified = verdicts.filter(pl.col("via") == "classifier")
    classifier = None
    if classified.height:
        hashes = classified["prompt_hash"].unique().to_list()
        if hashes != [SCOPE_TEMPLATE.hash]:
            raise ValueError(
                f"scope verdicts were made with prompt hash(es) {hashes}, the current prompt is "
                f"{SCOPE_TEMPLATE.hash}: re-materialise mamabench_scope_verdicts first"
            )
        classifier = ClassifierInfo(
            model=classified["model"][0],
            prompt_id=SCOPE_TEMPLATE.id,
            prompt_hash=SCOPE_TEMPLATE.hash,
            prompt_text=SCOPE_TEMPLATE.text,
            smoke_test=bool(classified["endpoint"].str.starts_with("embedded:").any()),
        )
    agreement = tables["agreement"]
    return ReleaseInputs(
        name="mamabench",
        version=version,
        items=tables["items"],
        criteria=tables["criteria"],
        accounting=tables["accounting"],
        verdicts=verdicts,
        yields=tables["yields"],
        provenance=tables["provenance"],
        classifier=classifier,
        agreement=classifier_agreement(agreement),
        agreement_info={
            "audit": classifier_audit(agreement),
            "reference_model": agreement["model_b"][0] if agreement.height else None,
            "classifier_identity": agreement["identity_a"][0] if agreement.height else None,
            "reference_identity": agreement["identity_b"][0] if agreement.height else None,
            "pools": pools,
            "sample_size": size,
            "seed": seed,
        },
        parity=agreement_stats(tables["parity"]),
        calibration=tables.get("calibration"),
    )
