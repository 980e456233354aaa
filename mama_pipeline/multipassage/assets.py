"""Dagster assets of the multi-passage track (group ``multipassage``), thin over the pure modules.

Inputs from other areas: ``corpus_chunks``; the retrievers of ``retrieval.retrievers``
(run here on the track's questions, one partition each, as ``rankings`` does for the
single-chunk queries); the judge through :func:`mama_pipeline.judging._judge.judge_pairs` (relevance
labels) and :func:`mama_pipeline.multipassage._fact_labels.label_facts` (which facts each pooled chunk states).
"""

import json

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table, none_as_text
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.common.shared_inputs import CHUNKS
from mama_pipeline.evaluation import refused_rows
from mama_pipeline.multipassage._candidates import candidate_sets, drop_counts, sampling_sources
from mama_pipeline.multipassage._chunk_lookup import chunk_lookup
from mama_pipeline.multipassage._failures import failure_listing, label_bounds, over_bound
from mama_pipeline.multipassage._multipassage_prompts import (
    fact_check_template,
    facts_stated_model,
    verifier_model,
    verifier_template,
    writer_template,
)
from mama_pipeline.multipassage._multipassage_scoreboard import score_track
from mama_pipeline.multipassage._question_ids import assign_question_ids
from mama_pipeline.multipassage._questions import (
    decide,
    fact_check_requests,
    run_fact_checks,
    run_writer,
    status_counts,
    verifier_requests,
    written_questions,
)
from mama_pipeline.multipassage._track_rankings import RANKINGS_TABLE, stored_track_rankings
from mama_pipeline.multipassage.settings import check_against
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource, data_path
from mama_pipeline.retrieval import retriever_versions
from mama_pipeline.settings import PipelineSettings

GROUP = "multipassage"
_BOARD = "evaluation.alpha evaluation.confidence evaluation.resamples evaluation.seed evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict llm.judge multipassage.alpha multipassage.cutoffs multipassage.headline_measure multipassage.significance_measures retrieval.retrievers"
_WRITER = "llm.embedded_server llm.judge llm.query_writer multipassage.max_words multipassage.verifier_stage multipassage.writer_stage"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    # the encoder's entry (its multipassage_encoder_files version); the other entries' names and kinds only checked
    "multipassage_candidates": "corpus.min_body_words corpus.tiers multipassage.dense_retriever multipassage.min_similarity multipassage.neighbours multipassage.pool_retrievers multipassage.section_level multipassage.seed multipassage.set_sizes multipassage.sets_per_source retrieval.retrievers@observed",
    "multipassage_questions": _WRITER,
    "multipassage_decisions": _WRITER,
    # its own retriever's entry: its partition of retrieval_input_files
    "multipassage_rankings": "evaluation.cutoffs multipassage.cutoffs multipassage.pool_depth retrieval.retrievers@observed",
    "multipassage_pool": "multipassage.pool_depth multipassage.pool_retrievers retrieval.pooled",
    "multipassage_labels": "judging.batch_pairs llm.embedded_server llm.judge",
    "multipassage_fact_labels": "llm.embedded_server llm.judge",
    "multipassage_per_query": _BOARD,
    "multipassage_scoreboard": _BOARD,
    "multipassage_significance": _BOARD,
    "multipassage_report": "evaluation llm multipassage.headline_measure",
}
RETRIEVAL_INPUT_FILES = "retrieval_input_files"  # the retrieval group's source: the retrievers' models
ENCODER_FILES = "multipassage_encoder_files"
multipassage_encoder_files = observed_input(
    ENCODER_FILES,
    GROUP,
    "The version of multipassage.dense_retriever, whose encoder finds the cross-source neighbours (its settings "
    "entry, depth and model files: retrieval/_retriever_versions.py).",
    lambda s: retriever_versions(s.retrieval, s.resolve)[s.multipassage.dense_retriever],
)
REGISTRY_TABLE = "multipassage_id_registry"
QUESTIONS = dg.AssetIn("multipassage_questions")
QUESTION_COLUMNS = [
    "query_id",
    "query_text",
    "set_id",
    "chunk_ids",
    "facts",
    "fact_chunk_ids",
    "kind",
    "size",
    "source",
    "tier",
    "writer_model",
    "writer_prompt_hash",
    "verifier_model",
    "verifier_prompt_hash",
    "temperature",
    "corpus_version",
]


def track_depth(s: PipelineSettings) -> int:
    """Ranks stored per question: enough for the pool and every cutoff."""
    return max(s.multipassage.pool_depth, *s.multipassage.cutoffs, *s.evaluation.cutoffs)


@dg.asset(
    group_name=GROUP,
    ins={"chunks": CHUNKS},
    deps=[ENCODER_FILES],  # the dense neighbours' encoder
    description="Every candidate chunk set (section neighbours, cross-source dense neighbours) with its status: "
    "sampled, not_sampled, or dropped with the reason.",
)
def multipassage_candidates(
    context: dg.AssetExecutionContext, settings: SettingsResource, store: StoreResource, chunks: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.multipassage._neighbours import dense_neighbours, embedding_encoder

    s = settings.get()
    mp = s.multipassage
    check_against(mp, {r.name: r.kind for r in s.retrieval.retrievers}, list(s.corpus.tiers))
    spec = s.retrieval.retriever(mp.dense_retriever)
    tier_of = s.corpus.tier_of()
    anchors = chunks.filter(pl.col("source").is_in(list(sampling_sources(tier_of, mp.sets_per_source))))
    anchors = anchors["chunk_id"].to_list()
    encoder = embedding_encoder(spec, s.resolve)
    neighbours, stats = dense_neighbours(store.get(), encoder, chunks, anchors, mp.neighbours)
    context.log.info(
        f"multipassage: {len(anchors)} anchors, {stats.encoded} chunk texts embedded now, {stats.cached} from the cache"
        + ("" if anchors else " (no tier is given sets in multipassage.sets_per_source: no candidate sets)")
    )
    frame = candidate_sets(
        chunks,
        tier_of,
        mp.sets_per_source,
        neighbours,
        sizes=mp.set_sizes,
        section_level=mp.section_level,
        min_similarity=mp.min_similarity,
        min_body_words=s.corpus.min_body_words,
        seed=mp.seed,
    )
    by = frame.group_by("kind", "size", "status").len().sort("kind", "size", "status")
    sampled = frame.filter(pl.col("status") == "sampled").group_by("tier", "kind").len().sort("tier", "kind")
    return dg.Output(
        frame,
        metadata={
            "candidates": frame.height,
            "sampled": int((frame["status"] == "sampled").sum()),
            "not_sampled": int((frame["status"] == "not_sampled").sum()),
            **{f"dropped/{k}": v for k, v in drop_counts(frame).items()},
            "by_kind_size_status": md_table(by),
            "sampled_by_tier": md_table(sampled),
            "dense_retriever": mp.dense_retriever,
            "chunk_texts_embedded_now": stats.encoded,
            **encoder.client_figures(),  # a served encoder's calls and wait (none when every text was cached)
            "seed": mp.seed,
        },
    )


@dg.multi_asset(
    group_name=GROUP,
    ins={"multipassage_candidates": dg.AssetIn("multipassage_candidates"), "chunks": CHUNKS},
    outs={
        "multipassage_decisions": dg.AssetOut(
            description="One decision per sampled set: kept, or the reason it failed writing or verification.",
        ),
        "multipassage_questions": dg.AssetOut(
            description="Verified questions with stable ids mq_00001..., their chunk set, the facts a complete "
            "answer needs (each with the chunk it was taken from), "
            "tier and provenance. Only kept decisions are here.",
        ),
    },
)
def multipassage_questions(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    llm: LLMResource,
    multipassage_candidates: pl.DataFrame,
    chunks: pl.DataFrame,
):
    s = settings.get()
    mp = s.multipassage
    sets = multipassage_candidates.filter(pl.col("status") == "sampled").sort("set_id")
    lookup = chunk_lookup(chunks, set(sets["chunk_ids"].explode().drop_nulls().to_list()))
    w_cfg, v_cfg = getattr(s.llm, mp.writer_stage), getattr(s.llm, mp.verifier_stage)
    w_reasoning, v_reasoning = w_cfg.reasoning == "json_field", v_cfg.reasoning == "json_field"
    w_tpl, v_tpl, f_tpl = (
        writer_template(mp.max_words, w_reasoning),
        verifier_template(v_reasoning),
        fact_check_template(v_reasoning),
    )
    meta: dict = {}
    with llm.client(mp.writer_stage, context) as client:
        w_reports = run_writer(client, w_tpl, w_reasoning, sets, lookup)
        writer = (client.model, w_tpl.hash)
    for size, report in w_reports.items():
        meta.update({f"write size {size}:{k}": v for k, v in report.metadata().items()})
    written = written_questions(sets, [r for report in w_reports.values() for r in report.results], mp.max_words)
    v_requests = verifier_requests(written, sets, lookup, v_tpl)
    verdicts = []
    with llm.client(mp.verifier_stage, context) as client:
        # the verifier's two kinds of request, against the stage's budget before the first is sent
        client.check_budget(
            [(v_tpl, verifier_model(v_reasoning), v_requests)]
            + [
                (f_tpl, facts_stated_model(v_reasoning, n), r)
                for n, r in fact_check_requests(written, lookup, f_tpl).items()
            ]
        )
        if v_requests:
            report = client.run(v_tpl, verifier_model(v_reasoning), v_requests)
            verdicts += report.results
            meta.update({f"verify:{k}": v for k, v in report.metadata().items()})
        for n, report in run_fact_checks(client, f_tpl, v_reasoning, written, lookup).items():
            verdicts += report.results
            meta.update({f"check {n} facts:{k}": v for k, v in report.metadata().items()})
        verifier = (client.model, v_tpl.hash)
    decisions = decide(sets, written, verdicts, writer=writer, verifier=verifier, temperature=w_cfg.temperature)
    kept = decisions.filter(pl.col("status") == "kept")
    db = store.get()
    registry = db.read_table(REGISTRY_TABLE) if db.table_exists(REGISTRY_TABLE) else None
    ids, registry = assign_question_ids(kept["set_id"].to_list(), registry)
    questions = (
        kept.with_columns(
            query_id=pl.col("set_id").replace_strict(ids, return_dtype=pl.String), query_text=pl.col("question")
        )
        .select(QUESTION_COLUMNS)
        .sort("query_id")
    )
    db.write_table(REGISTRY_TABLE, registry)
    counts = status_counts(decisions)
    by_tier = decisions.group_by("tier").agg(pl.len().alias("sets"), (pl.col("status") == "kept").sum().alias("kept"))
    yield dg.Output(
        decisions,
        output_name="multipassage_decisions",
        metadata={
            **{f"status/{k}": v for k, v in counts.items()},
            "sets": decisions.height,
            "verification_requests": len(v_requests),
            "kept_by_tier": md_table(by_tier.sort("tier")),
            **meta,
        },
    )
    yield dg.Output(
        questions,
        output_name="multipassage_questions",
        metadata={
            "questions": questions.height,
            "by_size": md_table(questions.group_by("size", "kind").len().sort("size", "kind")),
            "not_released": decisions.height - questions.height,
        },
    )


@dg.asset(  # partitioned per retriever, as rankings, by build_defs (mama_pipeline.partitions)
    group_name=GROUP,
    ins={"chunks": CHUNKS, "questions": QUESTIONS},
    deps=[RETRIEVAL_INPUT_FILES],
    description="Top-k chunks per multi-passage question of one configured retriever (partition = retriever).",
)
def multipassage_rankings(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    chunks: pl.DataFrame,
    questions: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.retrieval import empty_rankings, retrieval_env, run_retriever

    s = settings.get()
    spec = s.retrieval.retriever(context.partition_key)
    if questions.is_empty():
        return dg.Output(empty_rankings(), metadata={"retriever": spec.name, "questions": 0, "rows": 0})
    db = store.get()
    env = retrieval_env(  # a fusion or reranker reads the track's rankings of its runs
        s,
        db,
        context.log.info,
        lambda names, ids: db.read_table(RANKINGS_TABLE, partitions=names, where={"query_id": ids}),
    )
    out = run_retriever(spec, chunks, questions.select("query_id", "query_text"), track_depth(s), env)
    return dg.Output(out.rankings, metadata=none_as_text(out.metadata))


@dg.asset(
    group_name=GROUP,
    deps=[multipassage_rankings],
    ins={"questions": QUESTIONS},
    description="Judging pool of the track: the pooled retrievers' top-k per question plus every chunk of its set.",
)
def multipassage_pool(
    settings: SettingsResource, store: StoreResource, questions: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.retrieval import pool_pairs, pool_stats

    s = settings.get()
    pooled = s.multipassage.pool_retrievers or s.retrieval.pooled
    stored = stored_track_rankings(store.get(), pooled, questions)
    pieces = questions.select("query_id", pl.col("chunk_ids").alias("seed_chunk_id")).explode("seed_chunk_id")
    pooled_names = pooled if questions.height else []
    pool = pool_pairs(stored, pooled_names, s.multipassage.pool_depth, pieces, include_seed=True)
    return dg.Output(
        pool,
        metadata={
            "retrievers": ", ".join(pooled),
            "depth": s.multipassage.pool_depth,
            **pool_stats(pool, pooled_names, questions.height),
        },
    )


@dg.asset(
    group_name=GROUP,
    ins={"chunks": CHUNKS, "questions": QUESTIONS},
    description="Every pooled pair of the track labelled by the judge for relevance (stored labels reused, holes "
    "asked), or listed as failed with its reason.",
)
def multipassage_labels(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    llm: LLMResource,
    multipassage_pool: pl.DataFrame,
    questions: pl.DataFrame,
    chunks: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.judging import judge_pairs, output_model

    s = settings.get()
    with llm.client("judge", context) as client:
        run = judge_pairs(
            client,
            store.get(),
            multipassage_pool.select("query_id", "chunk_id"),
            questions.select("query_id", "query_text"),
            chunks,
            answer_model=output_model(s.llm.judge.reasoning),
            batch_pairs=s.judging.batch_pairs,
        )
    outcomes = run.outcomes.join(
        multipassage_pool.select("query_id", "chunk_id", "is_seed"), on=["query_id", "chunk_id"], how="left"
    ).rename({"is_seed": "required_piece"})
    return dg.Output(outcomes, metadata={**run.metadata(), **failure_listing(outcomes)})


@dg.asset(
    group_name=GROUP,
    ins={"chunks": CHUNKS, "questions": QUESTIONS},
    description="Every pooled pair of the track labelled by the judge with the question's facts the chunk states "
    "(one cached request per pair), or listed as failed with its reason.",
)
def multipassage_fact_labels(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    multipassage_pool: pl.DataFrame,
    questions: pl.DataFrame,
    chunks: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.multipassage._fact_labels import label_facts
    from mama_pipeline.multipassage._multipassage_prompts import fact_judge_template

    s = settings.get()
    reasoning = s.llm.judge.reasoning == "json_field"
    lookup = chunk_lookup(chunks, set(multipassage_pool["chunk_id"].to_list()))
    with llm.client("judge", context) as client:
        labels, reports = label_facts(
            client, fact_judge_template(reasoning), reasoning, multipassage_pool, questions, lookup
        )
    meta = {f"{n} facts:{k}": v for n, report in reports.items() for k, v in report.metadata().items()}
    stated = labels.filter(pl.col("status") == "labelled")
    return dg.Output(
        labels,
        metadata={
            "pairs": labels.height,
            "labelled": stated.height,
            "pairs_stating_a_fact": int((stated["facts"].list.len() > 0).sum()),
            "other_chunks_stating_a_fact": int(((stated["facts"].list.len() > 0) & ~stated["required_piece"]).sum()),
            **failure_listing(labels),
            **meta,
        },
    )


@dg.multi_asset(
    group_name=GROUP,
    deps=[multipassage_rankings],
    ins={"questions": QUESTIONS, "multipassage_fact_labels": dg.AssetIn("multipassage_fact_labels")},
    outs={
        "multipassage_scoreboard": dg.AssetOut(
            description="Mean of every track and headline measure per retriever, for all questions and per tier."
        ),
        "multipassage_per_query": dg.AssetOut(description="Every (retriever, question, measure) value."),
        "multipassage_significance": dg.AssetOut(
            description="Paired tests between every two retrievers, over all questions and per tier; Holm across pairs."
        ),
    },
)
def multipassage_scoreboard(
    settings: SettingsResource,
    store: StoreResource,
    multipassage_labels: pl.DataFrame,
    multipassage_fact_labels: pl.DataFrame,
    questions: pl.DataFrame,
):
    s = settings.get()
    names = s.retrieval.retriever_names
    bounds = label_bounds(multipassage_labels, multipassage_fact_labels, s.llm.judge.max_failure_rate)
    if over := over_bound(bounds):  # unlabelled pairs would count as non-relevant: the board is refused, not biased
        raise dg.Failure(f"multipassage scoreboard refused: {over}", metadata={b.unit: b.describe() for b in bounds})
    labels = multipassage_labels.filter(pl.col("status") == "labelled")
    facts = multipassage_fact_labels.filter(pl.col("status") == "labelled")
    scores = score_track(
        stored_track_rankings(store.get(), names, questions),
        labels,
        facts,
        questions,
        names,
        s.multipassage,
        s.evaluation,
    )
    overall = scores.board.filter((pl.col("tier") == "all") & pl.col("track"))
    wide = (
        overall.pivot(on="measure", index="retriever", values="mean", maintain_order=True)
        if overall.height
        else overall
    )
    yield dg.Output(
        scores.board,
        output_name="multipassage_scoreboard",
        metadata={
            "questions": questions.height,
            "retrievers": ", ".join(names),
            **{f"unlabelled {b.unit}": f"{b.failed} of {b.total} (bound {b.bound:.2%})" for b in bounds},
            "scoreboard": md_table(wide),
        },
    )
    yield dg.Output(
        scores.per_query, output_name="multipassage_per_query", metadata={"values": scores.per_query.height}
    )
    sig = scores.significance
    yield dg.Output(
        sig,
        output_name="multipassage_significance",
        metadata={
            "tests": sig.height,
            "measures": json.dumps(s.multipassage.significance_measures),
            "significant_after_holm": int((sig["p_randomization_holm"] < s.evaluation.alpha).sum()),
            "refused": refused_rows(sig),  # an interval or p not computed: its reason in the row's refused
        },
    )


@dg.asset(
    group_name=GROUP,
    description="Static HTML page of the track: scoreboard (all and per tier) with the headline measure's "
    "intervals, paired tests, how the questions were built (candidate drops, verification outcomes); its tables "
    "also as LaTeX and CSV.",
    ins={
        "per_query": dg.AssetIn(
            "multipassage_per_query", metadata={"columns": ["retriever", "query_id", "measure", "value"]}
        )
    },
)
def multipassage_report(
    settings: SettingsResource,
    per_query: pl.DataFrame,
    multipassage_scoreboard: pl.DataFrame,
    multipassage_significance: pl.DataFrame,
    multipassage_candidates: pl.DataFrame,
    multipassage_decisions: pl.DataFrame,
) -> dg.MaterializeResult:
    from mama_pipeline.evaluation import default_names
    from mama_pipeline.llm.embedded_banner import embedded_banner
    from mama_pipeline.multipassage._multipassage_page import TrackStats, write_track_report

    s = settings.get()
    page = write_track_report(
        multipassage_scoreboard,
        multipassage_significance,
        multipassage_candidates,
        multipassage_decisions,
        s.multipassage.headline_measure,
        s.evaluation.alpha,
        data_path(settings, "reports", "multipassage"),
        TrackStats(per_query, s.evaluation.resamples, s.evaluation.seed, s.evaluation.confidence),
        default_names(s.evaluation),
        embedded_banner(s.llm, ("query_writer", "judge")),
    )
    return dg.MaterializeResult(
        metadata={"report": dg.MetadataValue.path(str(page)), "report_url": dg.MetadataValue.url(page.as_uri())}
    )


ASSETS = [
    multipassage_encoder_files,
    multipassage_candidates,
    multipassage_questions,
    multipassage_rankings,
    multipassage_pool,
    multipassage_labels,
    multipassage_fact_labels,
    multipassage_scoreboard,
    multipassage_report,
]
