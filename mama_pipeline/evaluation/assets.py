"""Dagster assets of the evaluation group, thin over the pure modules.

Inputs from other areas: ``rankings`` (every configured retriever's, read from the
store a slice of queries at a time: ``StoredRun``), ``judgments`` (query_id, chunk_id, score 0..6),
``queries`` (query_id, query_text, tier, ...), ``corpus_chunks`` (chunk_id, text). Run files listed in
``evaluation.run_files`` join the scoreboard without entering the pool: nothing is re-judged. Tables that grow with
the pool (judgments, chunks, per-query values) are read from the store with only the columns and rows a step uses.
"""

import json

import dagster as dg
import polars as pl

from mama_pipeline.circularity import circularity_flags, circularity_notes, flag_table, retrieval_flags
from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.observed_inputs import observed_input, settings_files_fingerprint
from mama_pipeline.common.shared_inputs import QUERIES
from mama_pipeline.common.slices import id_slices
from mama_pipeline.common.spilled_slices import SpilledSlices
from mama_pipeline.evaluation._audits import leak_summary, leaks
from mama_pipeline.evaluation._beir_evaluation import (
    beir_report_inputs,
    evaluate_beir,
    load_benchmark,
    registry_inputs,
    run_registry,
)
from mama_pipeline.evaluation._clinician_note import AGREEMENT_TABLE as CLINICIAN_AGREEMENT
from mama_pipeline.evaluation._clinician_note import clinician_notes
from mama_pipeline.evaluation._evaluation_tables import CHUNKS_TABLE, PER_QUERY, judged_chunk_texts
from mama_pipeline.evaluation._held_out_gaps import retrieval_gaps
from mama_pipeline.evaluation._judged_coverage import incomplete_pool_flags
from mama_pipeline.evaluation._judged_scoreboard import scoring_plan
from mama_pipeline.evaluation._per_query_files import write_per_query_files
from mama_pipeline.evaluation._per_query_scoring import (
    PER_QUERY_SCHEMA,
    board_of,
    per_query_blocks,
    wide_scoreboard,
)
from mama_pipeline.evaluation._retrieval_page import ReportInputs, label_mix, write_report
from mama_pipeline.evaluation._scoreboard_measures import zero_one_measures
from mama_pipeline.evaluation._segments import BOARD_SCHEMA, SIG_SCHEMA, SegmentResult, beir_segments, segment_measures
from mama_pipeline.evaluation._significance import SIGNIFICANCE_SCHEMA, pairwise_significance, refused_rows
from mama_pipeline.evaluation._stored_qrels import JUDGMENTS, StoredQrels
from mama_pipeline.evaluation._stored_run import RANKINGS, StoredRun
from mama_pipeline.evaluation._trec import read_trec_run
from mama_pipeline.llm.embedded_banner import embedded_banner
from mama_pipeline.resources import SettingsResource, StoreResource, data_path, scratch_path
from mama_pipeline.store.table_schema import table_schema

GROUP = "evaluation"
_STATS = "evaluation.alpha evaluation.confidence evaluation.resamples evaluation.seed"
_GRADES = "evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict"
_FLAGS = "circularity.families llm.answer_grader llm.judge llm.query_writer llm.rubric_judge retrieval.retrievers systems.entries"  # the circularity flags
_BOARD = (
    f"{_STATS} {_GRADES} {_FLAGS} evaluation.headline_measure evaluation.run_files evaluation.significance_measures"
)
_BEIR = f"{_STATS} evaluation.beir evaluation.segments retrieval.retrievers"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "per_query_results": _BOARD,
    "scoreboard": f"{_BOARD} judging.min_judged_share",
    "significance": _BOARD,
    "evaluation_report": f"{_BOARD} corpus.tiers evaluation.segments llm.cross_model_judge llm.reference_judge "
    "release.held_out",
    "beir_scoreboard": _BEIR,
    "beir_significance": _BEIR,
    "beir_audits": _BEIR,
    "beir_segment_scoreboard": _BEIR,
    "beir_segment_significance": _BEIR,
}
INPUT_FILES = "evaluation_input_files"
RETRIEVAL_INPUT_FILES = "retrieval_input_files"  # the retrieval group's source: the retrievers' models and runs
REPORT_DIR = ("reports", "evaluation")
PER_QUERY_DIR = ("results", "per_query")
JUDGING_AUDITS = ("judge_reliability", "judge_confusion", "pool_completeness")  # shown when materialised


BEIR_SCOREBOARD_SCHEMA = table_schema("beir_scoreboard")
AUDIT_SCHEMA = table_schema("beir_audits")


def run_files(settings) -> pl.DataFrame | None:
    """The configured run files as one run table (None when there are none)."""
    files = [read_trec_run(settings.resolve(f.path), f.name).drop("score") for f in settings.evaluation.run_files]
    return pl.concat(files) if files else None


@dg.multi_asset(
    group_name=GROUP,
    deps=[RANKINGS, JUDGMENTS, INPUT_FILES],
    ins={"queries": QUERIES},
    outs={
        "scoreboard": dg.AssetOut(
            description="Mean of every measure per retriever (tier 'all', then per tier), "
            "robust measures first; queries without a qualifying chunk score 0."
        ),
        "per_query_results": dg.AssetOut(
            description="Every (retriever, benchmark query, measure) value; also "
            "written as one file per retriever, pairable by query id."
        ),
        "significance": dg.AssetOut(
            description="Paired tests between every two retrievers: bootstrap CI of the "
            "difference, randomization test, exact McNemar on hits; Holm across pairs."
        ),
    },
)
def scoreboard(settings: SettingsResource, store: StoreResource, queries: pl.DataFrame):
    s = settings.get()
    ev = s.evaluation
    db = store.get()
    plan = scoring_plan(ev)
    measures = plan.measures()
    run = StoredRun(db, s.retrieval.retriever_names, run_files(s))
    labels = StoredQrels(db)
    query_ids = queries.sort("query_id")["query_id"].to_list()
    folder = data_path(settings, *PER_QUERY_DIR) / "mamaretrieval"
    answered: dict[str, int] = {}
    # the values are computed a retriever and slice of queries at a time into scratch files, which the IO manager
    # copies into the store: its write lock is not held while they are computed (another step's write waited 46 s
    # on them at ten times the paper); the steps below read them back from the store
    with SpilledSlices(scratch_path(settings), pl.DataFrame(schema=PER_QUERY_SCHEMA)) as spill:
        for block in per_query_blocks(
            run.of_queries, labels.of_queries, query_ids, plan, run.retrievers, RANKINGS, JUDGMENTS, answered=answered
        ):
            spill.add(block)
    yield dg.Output(
        spill.read(),
        output_name="per_query_results",
        metadata={
            "files": dg.MetadataValue.path(str(folder)),
            "values": len(run.retrievers) * len(query_ids) * len(measures),
        },
    )

    def values_of(name: str) -> pl.DataFrame:
        return db.read_table(PER_QUERY, columns=list(PER_QUERY_SCHEMA), where={"retriever": [name]})

    write_per_query_files(
        values_of,
        run.retrievers,
        measures,
        query_ids,
        folder,
        "mamaretrieval",
        run=run.of_retriever,
        qrels=labels.relevant(ev.lenient),
        relevant_at=ev.lenient,
    )
    tiers = queries.select("query_id", "tier") if "tier" in queries.columns else None
    board = board_of(measures, run.retrievers, query_ids, values_of, labels.best(), tiers)
    dropped = {
        "run rows of queries outside the benchmark": run.rows_outside(query_ids),
        "qrels of queries outside the benchmark": labels.outside(query_ids),
        **labels.dropped,
    }
    without = {name: len(query_ids) - n for name, n in answered.items()}
    overall = board.filter(pl.col("tier") == "all")
    no_rel = overall.filter(pl.col("family") == "HR").group_by("cut").agg(pl.col("queries_no_relevant").first())
    wide = wide_scoreboard(board)
    headline = [c for c in wide.columns if c.startswith(("HR@5", "MRR", "nDCG@10", "Judged@10"))]
    flags = incomplete_pool_flags(board, s.judging.min_judged_share)
    yield dg.Output(
        board,
        output_name="scoreboard",
        metadata={
            "queries": len(query_ids),
            "retrievers": ", ".join(run.retrievers),
            "queries_without_relevant_chunk": md_table(no_rel.sort("cut")),
            "queries_without_results": json.dumps(without, sort_keys=True),
            "dropped_rows": json.dumps(dropped, sort_keys=True),
            "scoreboard": md_table(wide.select("retriever", *headline)),
            f"precision_recall_flagged (Judged@k < {s.judging.min_judged_share})": md_table(flags)
            if flags.height
            else "none",
            "circularity": md_table(flag_table(circularity_flags(s))),
        },
    )
    sig = pairwise_significance(
        db.read_table(PER_QUERY, columns=list(PER_QUERY_SCHEMA), where={"measure": ev.significance_measures}),
        ev.significance_measures,
        run.retrievers,
        n_resamples=ev.resamples,
        seed=ev.seed,
        confidence=ev.confidence,
        binary_measures=zero_one_measures(ev.significance_measures),
    )
    yield dg.Output(
        sig,
        output_name="significance",
        metadata={
            "pairs": sig.select("retriever_a", "retriever_b").unique().height,
            "measures": ", ".join(ev.significance_measures),
            "significant_after_holm": int((sig["p_randomization_holm"] < ev.alpha).sum()),
            "refused": refused_rows(sig),  # an interval or p not computed: its reason in the row's refused
        },
    )


@dg.asset(
    group_name=GROUP,
    deps=[RANKINGS, JUDGMENTS, CHUNKS_TABLE, PER_QUERY, CLINICIAN_AGREEMENT, *JUDGING_AUDITS, INPUT_FILES],
    description="Static HTML report: header (corpus version, judge model, prompt hash, dates, counts), scoreboard "
    "with bootstrap intervals, Holm-adjusted significance matrix and heatmap, measures by k, per tier and per "
    "source, segment tables with paired tests, label distribution, judge reliability, pool completeness, "
    "clinician agreement notes and the leak audit.",
    ins={"queries": QUERIES},
)
def evaluation_report(
    settings: SettingsResource,
    store: StoreResource,
    scoreboard: pl.DataFrame,
    significance: pl.DataFrame,
    queries: pl.DataFrame,
    segment_scoreboard: pl.DataFrame,
    segment_significance: pl.DataFrame,
) -> dg.MaterializeResult:
    s = settings.get()
    ev = s.evaluation
    db = store.get()
    labels = StoredQrels(db)
    chunks = db.read_table(CHUNKS_TABLE, columns=["corpus_version"])  # the header's version and count
    shown = list(dict.fromkeys([*ev.significance_measures, ev.headline_measure]))  # all the page reads per query
    per_query_results = db.read_table(PER_QUERY, where={"measure": shown})
    run = StoredRun(db, s.retrieval.retriever_names, run_files(s))
    texts = queries.select("query_id", pl.col("query_text").alias("text"))
    leak, leaked = leak_summary(
        leaks(
            texts.filter(pl.col("query_id").is_in(ids)),
            judged_chunk_texts(db, ev.lenient, ids).select(pl.col("chunk_id").alias("doc_id"), "text"),
            labels.of_queries(ids),
            ev.lenient,
        )
        for ids in id_slices(texts["query_id"].to_list())
    )
    mix_k = min(10, max(ev.cutoffs))
    audits = {name: db.read_table(name) if db.table_exists(name) else None for name in JUDGING_AUDITS}
    rule = s.release.held_out.rule("query_id")  # the held_out_scoreboard's figures, computed the same way
    gaps = (
        retrieval_gaps(per_query_results, ev.significance_measures, rule, ev.resamples, ev.seed)
        if rule.active
        else None
    )
    page = write_report(
        ReportInputs(
            title="mamaretrieval retriever scoreboard",
            board=scoreboard,
            significance=significance,
            headline=ev.headline_measure,
            header=mamaretrieval_header(db, labels, queries, chunks, scoreboard, ev),
            notes=[
                f"Leak audit: {leak['leaked_exact']} of {leak['queries_with_gold']} queries appear verbatim in a "
                f"chunk labelled >= {ev.lenient} ({leak['leaked_any']} ignoring case and spacing).",
                *clinician_notes(db),
                *circularity_notes(retrieval_flags(s)),  # the systems' flags stand on the systems page
            ],
            per_query=per_query_results,
            headline_measures=ev.significance_measures,
            segments={"tier": queries.select("query_id", "tier"), "source": queries.select("query_id", "source")},
            segment_tests=SegmentResult(
                segment_scoreboard,
                segment_significance,
                ev.segments.min_queries,
                segment_measures(ev),
                ev.segments.resamples,
            ),
            label_counts=labels.counts(),
            label_mix=label_mix(run.slices(run.query_ids()), labels.of_queries, mix_k),
            mix_k=mix_k,
            reliability=audits["judge_reliability"],
            confusion=audits["judge_confusion"],
            completeness=audits["pool_completeness"],
            alpha=ev.alpha,
            confidence=ev.confidence,
            resamples=ev.resamples,
            seed=ev.seed,
            held_out=gaps,
            held_out_rule=rule,
            banners=embedded_banner(s.llm, ("query_writer", "judge", "reference_judge", "cross_model_judge")),
            segment_order={"tier": list(s.corpus.tiers)},
        ),
        data_path(settings, *REPORT_DIR),
    )
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(page)),
            "report_url": dg.MetadataValue.url(page.as_uri()),
            "leaked_queries_exact": leak["leaked_exact"],
            "leaked_queries_any": leak["leaked_any"],
            "leaked_examples": md_table(leaked.head(10)),
        }
    )


def mamaretrieval_header(
    db,
    labels: StoredQrels,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    board: pl.DataFrame,
    ev,
) -> list[tuple[str, str]]:
    """The report's facts: versions, models, prompt hashes, dates (of the judge's answers behind the stored
    judgments) and counts."""
    judged = labels.judged_by()
    pairs = labels.count()

    def values(df: pl.DataFrame, col: str) -> str:
        return ", ".join(sorted(str(v) for v in df[col].drop_nulls().unique().to_list())) if col in df.columns else ""

    dates = ""
    if db.table_exists("llm_responses") and pairs:
        span = db.query(
            "SELECT min(created_at) AS first, max(created_at) AS last FROM llm_responses "
            f'WHERE cache_key IN (SELECT cache_key FROM "{JUDGMENTS}")'
        )
        if span.height and span["first"][0] is not None:
            dates = f"{span['first'][0]:%Y-%m-%d} to {span['last'][0]:%Y-%m-%d}"
    overall = board.filter(pl.col("tier") == "all")
    return [
        ("corpus version", values(chunks, "corpus_version")),
        ("judge model", values(judged, "judge_model")),
        ("judge prompt hash", values(judged, "prompt_hash")),
        ("query writer", f"{values(queries, 'model')} (prompt hash {values(queries, 'prompt_hash')})"),
        ("judged (answer dates)", dates or "n/a"),
        (
            "counts",
            f"{chunks.height} chunks, {queries.height} queries, {pairs} judged pairs, "
            f"{overall['retriever'].n_unique()} retrievers",
        ),
        ("relevance cuts", f"lenient >= {ev.lenient}, strict >= {ev.strict} (labels 0..{ev.max_grade})"),
        (
            "statistics",
            f"{ev.confidence:.0%} bootstrap intervals and paired randomization tests, {ev.resamples} "
            f"resamples, seed {ev.seed}; Holm correction across pairs",
        ),
    ]


@dg.multi_asset(
    group_name=GROUP,
    deps=[INPUT_FILES, RETRIEVAL_INPUT_FILES],  # the benchmarks, and the retrievers' models
    outs={
        "beir_scoreboard": dg.AssetOut(
            description="Every configured BEIR benchmark x retriever x measure (label >= 1)."
        ),
        "beir_significance": dg.AssetOut(description="Paired tests between the retrievers of each BEIR benchmark."),
        "beir_audits": dg.AssetOut(
            description="Leak audit (queries verbatim in a gold document) and truncation audit "
            "(documents longer than each encoder's max sequence length) per benchmark."
        ),
        "beir_segment_scoreboard": dg.AssetOut(
            description="Each benchmark's measures per segment (tier, source, "
            "configured query fields, query and relevant-document length bands)."
        ),
        "beir_segment_significance": dg.AssetOut(description="Paired tests per segment with enough queries."),
    },
)
def beir_evaluations(context: dg.AssetExecutionContext, settings: SettingsResource, store: StoreResource):
    from mama_pipeline.retrieval import retrieval_env

    s = settings.get()
    boards, sigs, audits, seg_boards, seg_sigs, meta = [], [], [], [], [], {}
    for cfg in s.evaluation.beir:
        loaded = load_benchmark(cfg, s.resolve)
        chunks, queries = registry_inputs(loaded.benchmark)
        depth = max(cfg.cutoffs)

        def env(load_rankings):
            return retrieval_env(s, store.get(), context.log.info, load_rankings)

        ranked, retriever_meta = run_registry(cfg.retrievers, chunks, queries, depth, s.retrieval, env)
        result = evaluate_beir(
            loaded, ranked, cfg, retriever_meta, s.evaluation.resamples, s.evaluation.seed, s.evaluation.confidence
        )
        ev = result.evaluation
        segments = beir_segments(loaded.benchmark, ev, cfg, s.evaluation)
        write_per_query_files(
            ev.per_query,
            ev.retrievers,
            ev.measures,
            ev.query_ids,
            data_path(settings, *PER_QUERY_DIR) / f"beir-{cfg.name}",
            cfg.name,
            run=result.run,
            qrels=result.qrels,
        )
        report = beir_report_inputs(
            result,
            cfg,
            retriever_meta,
            s.evaluation.resamples,
            s.evaluation.seed,
            s.evaluation.confidence,
            s.evaluation.alpha,
        )
        report.segment_tests = segments
        page = write_report(report, data_path(settings, "reports", f"beir-{cfg.name}"))
        boards.append(result.board.with_columns(pl.lit(cfg.name).alias("benchmark")))
        sigs.append(result.significance.with_columns(pl.lit(cfg.name).alias("benchmark")))
        audits.append(_audit_rows(cfg.name, result.leak, result.truncation))
        seg_boards.append(segments.board.with_columns(pl.lit(cfg.name).alias("benchmark")))
        seg_sigs.append(segments.significance.with_columns(pl.lit(cfg.name).alias("benchmark")))
        meta[f"{cfg.name}/report"] = dg.MetadataValue.path(str(page))
        meta[f"{cfg.name}/scoreboard"] = md_table(wide_scoreboard(result.board))
    yield dg.Output(_stack(boards, BEIR_SCOREBOARD_SCHEMA), output_name="beir_scoreboard", metadata=meta)
    yield dg.Output(_stack(sigs, {**SIGNIFICANCE_SCHEMA, "benchmark": pl.String}), output_name="beir_significance")
    yield dg.Output(_stack(audits, AUDIT_SCHEMA), output_name="beir_audits")
    yield dg.Output(_stack(seg_boards, {"benchmark": pl.String, **BOARD_SCHEMA}), output_name="beir_segment_scoreboard")
    yield dg.Output(_stack(seg_sigs, {"benchmark": pl.String, **SIG_SCHEMA}), output_name="beir_segment_significance")


def _stack(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    return pl.concat(frames).select(list(schema)) if frames else pl.DataFrame(schema=schema)


def _audit_rows(benchmark: str, leak: dict, truncation: pl.DataFrame) -> pl.DataFrame:
    rows = [
        {"benchmark": benchmark, "audit": "leak", "retriever": None, "model": None, "figure": k, "value": float(v)}
        for k, v in leak.items()
        if isinstance(v, (int, float))
    ]
    for r in truncation.iter_rows(named=True):
        for figure in ("max_seq_length", "documents", "longer_than_max", "share_longer_than_max"):
            rows.append(
                {
                    "benchmark": benchmark,
                    "audit": "truncation",
                    "retriever": r["retriever"],
                    "model": r["model"],
                    "figure": figure,
                    "value": float(r[figure]),
                }
            )
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA)


evaluation_input_files = observed_input(
    INPUT_FILES,
    GROUP,
    "The files and folders the evaluation settings name (run files: sha256; BEIR benchmark folders: each "
    "file's path, size and modification time).",
    lambda s: settings_files_fingerprint(s.evaluation, s.resolve),
)

ASSETS = [evaluation_input_files, scoreboard, evaluation_report, beir_evaluations]
