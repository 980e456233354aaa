"""Dagster assets of the robustness track (group ``robustness``), thin over the pure modules.

Inputs from other areas: ``generated_queries`` (the released queries), ``corpus_chunks`` (whole to rank
the variants; the holes' labelling reads only the chunks it judges), and, read from the store with only
the rows and columns a step uses, ``rankings`` (the clean rankings) and ``judgments`` (the parents'
judged pairs). The holes' and the scoreboard's steps read the rankings (clean and variant), judgments and
labels a slice of parents at a time; the holes' step also judges its holes a slice of parents at a time,
parking them and their labels in scratch files; the scoreboard's step streams ``robustness_per_query`` into
the store and reads it back a retriever and kind at a time for the board.
"""

import json

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import FAILURES_SHOWN, md_table, none_as_text
from mama_pipeline.common.observed_inputs import observed_input, settings_files_fingerprint
from mama_pipeline.common.shared_inputs import CHUNKS, QUERIES
from mama_pipeline.common.spilled_slices import SpilledSlices
from mama_pipeline.evaluation import default_names, refused_rows
from mama_pipeline.judging import OUTCOME_SCHEMA, judge_pair_slices, merge_metadata, output_model
from mama_pipeline.llm.embedded_banner import embedded_banner
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource, scratch_path
from mama_pipeline.retrieval import StoredRankings, empty_rankings, needs, ranking_violations, retrieval_env
from mama_pipeline.robustness._abbreviations import load_table
from mama_pipeline.robustness._labels import (
    HOLE_SCHEMA,
    NEED_COLUMNS,
    hole_outcomes,
    label_counts,
    label_needs_of,
)
from mama_pipeline.robustness._labels import variant_labels as build_labels
from mama_pipeline.robustness._robustness_page import write_page
from mama_pipeline.robustness._robustness_scoreboard import (
    PAIR_SCHEMA,
    LabelsOf,
    PairsOf,
    in_table_order,
    paired_measures,
    paired_slices,
    robustness_board,
)
from mama_pipeline.robustness._stored_holes import (
    JUDGMENTS,
    RANKINGS,
    VARIANT_RANKINGS,
    StoredHoles,
    judge_depth,
    parent_rows,
    ranked_rows,
    scored_retrievers,
)
from mama_pipeline.robustness._variant_rankings import rank_variants, runs_unranked, unranked_reason
from mama_pipeline.robustness._variants import (
    decisions_frame,
    deterministic_decisions,
    kept_variants,
    rewrite_decisions,
    rewrite_selection,
    status_counts,
)
from mama_pipeline.store import Store

GROUP = "robustness"
_VARIANTS = "llm.embedded_server llm.query_rewriter llm.rewrite_gate robustness.abbreviations robustness.kinds robustness.keep_when_gate_fails robustness.max_rewrite_words robustness.noise robustness.rewrite_queries robustness.seed"
_HOLES = "judging.batch_pairs llm.embedded_server llm.judge retrieval.pool_depth retrieval.retrievers robustness.judge_depth robustness.max_hole_pairs robustness.retrievers"
_BOARD = "evaluation.alpha evaluation.confidence evaluation.resamples evaluation.seed evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict evaluation.headline_measure evaluation.significance_measures llm.judge llm.query_rewriter llm.rewrite_gate retrieval.pool_depth retrieval.retrievers robustness.coverage_tolerance robustness.judge_depth robustness.noise robustness.resamples robustness.retrievers"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "query_variants": _VARIANTS,
    "variant_decisions": _VARIANTS,
    # its own retriever's entry and depth (the pools' settings set it): its partition of retrieval_input_files
    "variant_rankings": "retrieval.audit.depth@observed retrieval.audited@observed retrieval.pool_depth@observed "
    "retrieval.pooled@observed retrieval.retrievers@observed robustness.retrievers",
    "variant_holes": _HOLES,
    "variant_labels": _HOLES,
    "robustness_per_query": f"{_BOARD} llm.query_writer",
    "robustness_scoreboard": f"{_BOARD} llm.query_writer",
}
INPUT_FILES = "robustness_input_files"

robustness_input_files = observed_input(
    INPUT_FILES,
    GROUP,
    "The files the robustness settings name (the abbreviations table): sha256 of each.",
    lambda s: settings_files_fingerprint(s.robustness, s.resolve),
)
PER_QUERY = "robustness_per_query"
CORPUS = "corpus_chunks"  # the corpus group's asset and table
RETRIEVAL_INPUT_FILES = "retrieval_input_files"  # the retrieval group's source: the retrievers' models
REPORT_DIR = ("reports", "robustness")


@dg.multi_asset(
    group_name=GROUP,
    ins={"queries": QUERIES},
    deps=[INPUT_FILES],
    outs={
        "variant_decisions": dg.AssetOut(
            description="One decision per attempted (query, kind): kept, identical_to_parent, rewrite_failed, "
            "empty_rewrite, too_long, gate_failed or gate_rejected, with the gate's reason and the recipe."
        ),
        "query_variants": dg.AssetOut(
            description="Kept variants (ids <query id>~<kind>) with parent id, kind, seed and recipe: seeded "
            "character noise, clinical shorthand, and gated LLM rewrites (telegraphic, code-switched)."
        ),
    },
)
def query_variants(
    context: dg.AssetExecutionContext, settings: SettingsResource, llm: LLMResource, queries: pl.DataFrame
):
    s = settings.get()
    r = s.robustness
    table = load_table(s.resolve(r.abbreviations) if r.abbreviations else None)
    rows = []
    for kind in (k for k in r.kinds if k.steps):
        rows += deterministic_decisions(queries, kind, table, r)
    llm_kinds = [k for k in r.kinds if k.rewrite]
    selected = rewrite_selection(queries, r.rewrite_queries, r.seed) if llm_kinds else queries.clear()
    llm_meta = {}
    if selected.height:
        run = rewrite_decisions(
            lambda stage: llm.client(stage, context),
            selected,
            llm_kinds,
            r,
            s.llm.query_rewriter.reasoning == "json_field",
            s.llm.rewrite_gate.reasoning == "json_field",
        )
        rows += run.decisions
        llm_meta = run.metadata
    decisions = decisions_frame(rows)
    variants = kept_variants(decisions, queries)
    counts = status_counts(decisions)
    for line in counts.iter_rows(named=True):
        context.log.info("robustness: " + ", ".join(f"{k}={v}" for k, v in line.items()))
    common = {
        "seed": r.seed,
        "kinds": ", ".join(k.name for k in r.kinds),
        "noise_rates_per_letter": dg.MetadataValue.json(r.noise.model_dump()),
        "abbreviation_table": table.path,
        "abbreviation_table_sha256": table.sha256,
        "queries": queries.height,
        "queries_rewritten_by_llm": selected.height,
    }
    yield dg.Output(
        decisions,
        output_name="variant_decisions",
        metadata={
            **common,
            **llm_meta,
            "decisions": decisions.height,
            "by_kind_and_status": md_table(counts),
        },
    )
    yield dg.Output(
        variants,
        output_name="query_variants",
        metadata={
            **common,
            "variants": variants.height,
            "variants_by_kind": md_table(variants.group_by("kind").len().sort("kind")),
        },
    )


@dg.asset(  # partitioned per retriever by build_defs (mama_pipeline.partitions), as rankings
    group_name=GROUP,
    deps=[RANKINGS, RETRIEVAL_INPUT_FILES],
    ins={"chunks": CHUNKS, "query_variants": dg.AssetIn("query_variants")},
    description="One registry retriever's top-k for every variant (partition = retriever name; same index, encoder "
    "and depth as its clean ranking; a fusion or reranker reads its runs' variant rankings). Empty, with the reason "
    "in its metadata, for a retriever left out of robustness.retrievers or one that ranks no free text (an imported "
    "run file).",
)
def variant_rankings(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    chunks: pl.DataFrame,
    query_variants: pl.DataFrame,
) -> dg.Output:  # slices (Iterator[pl.DataFrame]): no Dagster type for an iterator
    # a slice of variants at a time, spilled to scratch files: memory grows with a slice, and the store's write
    # lock is held only while the IO manager copies the files, not while the variants are searched
    s = settings.get()
    name = context.partition_key
    db = store.get()
    runs = needs(s.retrieval.retriever(name))
    why = unranked_reason(s.retrieval, s.robustness.retrievers, name)
    if why is None and runs:  # a fusion or reranker reads its runs a slice at a time: every stored rank checked first
        made = context.instance.get_materialized_partitions(context.asset_key)
        why = runs_unranked(s.retrieval, name, StoredRankings(db, runs, VARIANT_RANKINGS), made, chunks, query_variants)
    if why is None and query_variants.is_empty():
        why = "no variants"
    if why is not None:
        context.log.info(f"robustness: {name} ranks no variant: {why}")
        meta = {"retriever": name, "variants": query_variants.height, "rows": 0, "not_ranked": why}
        return dg.Output(iter([empty_rankings()]), metadata=meta)
    env = retrieval_env(  # a fusion or reranker reads its runs' variant rankings
        s,
        db,
        context.log.info,
        lambda names, ids: db.read_table(VARIANT_RANKINGS, partitions=names, where={"query_id": ids}),
    )

    def add(rankings: pl.DataFrame) -> None:
        bad = ranking_violations(rankings)
        if bad.height:
            raise RuntimeError(f"variant rankings of {name!r}: {bad.height} rows out of trec_eval order: {bad.head(3)}")
        spill.add(rankings)

    with SpilledSlices(scratch_path(settings), empty_rankings()) as spill:
        meta = rank_variants(s.retrieval, name, chunks, query_variants, env, add, context.log.info)
    return dg.Output(spill.read(), metadata={**none_as_text(meta), "variants": query_variants.height})


@dg.multi_asset(
    group_name=GROUP,
    deps=[RANKINGS, JUDGMENTS, CORPUS, VARIANT_RANKINGS],
    ins={"queries": QUERIES, "query_variants": dg.AssetIn("query_variants")},
    outs={
        "variant_labels": dg.AssetOut(
            description="Every variant's labels: its parent's judged pairs (origin inherited) and the judged "
            "holes of the parent (origin hole)."
        ),
        "variant_holes": dg.AssetOut(
            description="(parent, chunk) pairs in the top-k of some variant or of the parent's clean ranking (by a "
            "scored retriever) without a label of the parent: judged now, reused from the label store, failed "
            "(with the reason) or over the budget."
        ),
    },
)
def variant_labels(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    llm: LLMResource,
    queries: pl.DataFrame,
    query_variants: pl.DataFrame,
):
    # a slice of parents at a time: their holes found, judged and parked in scratch files, so memory grows with a
    # slice; the holes' table is then written in its order (best rank, then parent and chunk) from those files
    s = settings.get()
    db = store.get()
    depth = judge_depth(s)
    scratch = scratch_path(settings)
    with (
        StoredHoles(s, db, query_variants, scratch) as holes,
        SpilledSlices(scratch, pl.DataFrame(schema=HOLE_SCHEMA)) as outcomes,
        SpilledSlices(scratch, pl.DataFrame(schema=OUTCOME_SCHEMA).select(NEED_COLUMNS)) as hole_labels,
    ):
        context.log.info(
            f"robustness: {holes.total} holes in the clean and variant top-{depth}, {holes.to_judge} to judge"
        )
        status: dict[str, int] = {}
        judged_meta: dict = {}
        failed = [pl.DataFrame(schema=HOLE_SCHEMA)]
        with llm.client("judge", context) as client:
            runs = judge_pair_slices(
                client,
                db,
                holes.pairs,
                queries,
                answer_model=output_model(s.llm.judge.reasoning),
                batch_pairs=s.judging.batch_pairs,
                expected_pairs=holes.to_judge,
            )
            for i, ((to_judge, over_budget), run) in enumerate(zip(holes.slices(), runs, strict=True)):
                done = hole_outcomes(to_judge, over_budget, run.outcomes)
                for (rank,), part in done.partition_by("best_rank", as_dict=True, maintain_order=True).items():
                    outcomes.add(part, (rank, i))  # read back by rank, then slice of parents: the table's order
                hole_labels.add(run.outcomes.filter(pl.col("status") == "labelled").select(NEED_COLUMNS), i)
                merge_metadata(judged_meta, run.metadata())
                for k, n in done.group_by("status").len().iter_rows():
                    status[k] = status.get(k, 0) + n
                failed.append(done.filter(pl.col("status") == "failed").head(FAILURES_SHOWN))
                context.log.info(f"robustness: holes of {i + 1} of {len(holes.quotas)} slices of parents judged")
        for q, c, reason in (
            pl.concat(failed)
            .sort("best_rank", "parent_id", "chunk_id")
            .head(FAILURES_SHOWN)
            .select("parent_id", "chunk_id", "failure_reason")
            .iter_rows()
        ):
            context.log.warning(f"robustness hole ({q}, {c}) failed: {reason}")
        judged = parent_rows(db, JUDGMENTS, "query_id", NEED_COLUMNS)
        needs = label_needs_of(  # read a slice of parents at a time
            judged, lambda ids: hole_labels.scan().filter(pl.col("query_id").is_in(ids)).collect()
        )
        # the metadata comes before the slices are written: a first pass over the needs keeps only their counts
        by_origin = label_counts(query_variants, needs)
        yield dg.Output(
            build_labels(query_variants, needs),  # slices, built and written in order by the IO manager
            output_name="variant_labels",
            metadata={
                "labels": int(by_origin.get_column("len").sum()),
                "judge_depth": depth,
                "by_kind_and_origin": md_table(by_origin),
            },
        )
        yield dg.Output(
            outcomes.read(sorted(outcomes.files)),
            output_name="variant_holes",
            metadata={
                "judge_depth": depth,
                "max_hole_pairs": "none" if s.robustness.max_hole_pairs is None else s.robustness.max_hole_pairs,
                "holes": holes.total,
                **{f"holes_in/{side}": n for side, n in holes.sides.items()},
                **{f"holes/{k}": status.get(k, 0) for k in ("judged", "reused", "failed", "over_budget")},
                **{f"judge/{k}": v for k, v in judged_meta.items()},
            },
        )
        hole_labels.discard()


def stored_labels(store: Store) -> LabelsOf:
    """The variant label rows of some parents, read from the store a slice at a time (in the table's
    (variant_id, chunk_id) order)."""
    return parent_rows(store, "variant_labels", "parent_id", ["variant_id", "parent_id", "chunk_id", "score"])


def stored_pairs(store: Store, measures: list[str]) -> PairsOf:
    """The stored paired values of one retriever and kind (of ``measures`` only), in the table's order."""
    return lambda retriever, kind: store.read_table(
        PER_QUERY, columns=list(PAIR_SCHEMA), where={"retriever": [retriever], "kind": [kind], "measure": measures}
    )


@dg.multi_asset(
    group_name=GROUP,
    deps=[RANKINGS, VARIANT_RANKINGS, "variant_labels"],
    ins={
        "query_variants": dg.AssetIn("query_variants"),
        "variant_decisions": dg.AssetIn("variant_decisions", metadata={"columns": ["kind", "status"]}),  # counted
        "variant_holes": dg.AssetIn("variant_holes", metadata={"columns": ["sides", "status"]}),  # on the page
    },
    outs={
        "robustness_scoreboard": dg.AssetOut(
            description="Per tier, kind, retriever and headline measure: clean and variant means, the drop with its "
            "paired bootstrap interval, the paired randomization test and Holm across the family; both sides' "
            "Judged@k and a flag where they differ beyond robustness.coverage_tolerance. Also written as an HTML "
            "page with the drop plot under <data_dir>/reports/robustness."
        ),
        "robustness_per_query": dg.AssetOut(
            description="Per retriever, parent, kind and measure (the significance measures and Judged@k at the "
            "judge depth and at every evaluation cutoff): the clean and the variant value; Judged@k is null on a "
            "side whose ranking is empty."
        ),
    },
)
def robustness_scoreboard(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    query_variants: pl.DataFrame,
    variant_decisions: pl.DataFrame,
    variant_holes: pl.DataFrame,
):
    s = settings.get()
    db = store.get()
    names = scored_retrievers(s, db, query_variants)
    stats = s.evaluation.model_copy(update={"resamples": s.robustness.resamples or s.evaluation.resamples})
    tolerance = s.robustness.coverage_tolerance
    depth = judge_depth(s)
    also = [f"Judged@{k}" for k in s.evaluation.cutoffs]
    measures = paired_measures(stats, depth, also)
    clean, ranked = ranked_rows(db, names)
    # the values stream into the store a slice of parents at a time, in the table's order; the board reads them back
    slices = paired_slices(clean, ranked, query_variants, stored_labels(db), stats, names, depth, also)
    yield dg.Output(
        in_table_order(slices, scratch_path(settings)),
        output_name="robustness_per_query",
        metadata={
            "values": len(names) * query_variants.height * len(measures),
            "measures": ", ".join(sorted(measures)),
        },
    )
    judged = f"Judged@{depth}"
    pairs = stored_pairs(db, [*stats.significance_measures, judged])
    board = robustness_board(pairs, names, query_variants, stats, judged, tolerance)
    headline = s.evaluation.headline_measure
    page = write_page(
        s.data_path.joinpath(*REPORT_DIR),
        board,
        variant_decisions,
        variant_holes,
        headline,
        judged,
        tolerance,
        s.evaluation.alpha,
        embedded_banner(s.llm, ("query_writer", "judge", "query_rewriter", "rewrite_gate")),
        default_names(s.evaluation),
    )
    overall = board.filter((pl.col("tier") == "all") & (pl.col("measure") == headline))
    context.log.info(f"robustness: scoreboard of {len(names)} retrievers on {query_variants.height} variants")
    yield dg.Output(
        board,
        output_name="robustness_scoreboard",
        metadata={
            "page": dg.MetadataValue.path(str(page)),
            "retrievers": ", ".join(names),
            "resamples": stats.resamples,
            "variants": query_variants.height,
            "judged_measure": judged,
            "coverage_tolerance": tolerance,
            "comparisons": overall.height,  # (kind, retriever) pairs of the tier "all"
            "comparisons_coverage_differs": overall.filter(pl.col("coverage_differs")).height,
            "figures_refused": refused_rows(board),  # an interval or p not computed: its reason in refused
            "headline": md_table(
                overall.select(
                    "kind",
                    "retriever",
                    "measure",
                    "clean_mean",
                    "variant_mean",
                    "drop",
                    "ci_low",
                    "ci_high",
                    "p_holm",
                    "clean_judged",
                    "variant_judged",
                    "coverage_differs",
                ),
                100,
            ),
            "noise_rates_per_letter": dg.MetadataValue.json(json.loads(s.robustness.noise.model_dump_json())),
        },
    )
