"""Dagster assets of the leaderboards (group ``leaderboard``), thin over :mod:`mama_pipeline.leaderboard._build`.

``mamaretrieval_leaderboard`` (main, robustness, multi-passage) and ``mamabench_leaderboard`` (mcq, short answer,
rubric) each write their rows of the tables ``leaderboard``, ``leaderboard_comparisons`` and
``leaderboard_per_query`` (store partition = benchmark), the folder ``<data_dir>/leaderboard/<benchmark>``
(``leaderboard.json``, per-query files, ``leaderboard.html``: the bytes the release's ``leaderboard/`` folder
carries) and the page ``<data_dir>/reports/leaderboard/<benchmark>.html``. Submissions are read from the
submissions area's tables (asset ``submission_scores``, every partition); with none, the boards hold the configured
entries only.
"""

import shutil

import dagster as dg
import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.metadata import md_table
from mama_pipeline.leaderboard import _leaderboard_inputs as lb_inputs
from mama_pipeline.leaderboard._board import Entry, Stats
from mama_pipeline.leaderboard._build import (
    Leaderboard,
    answer_specs,
    build_benchmark,
    facts,
    measures_of,
    retrieval_specs,
)
from mama_pipeline.leaderboard._leaderboard_files import MANUSCRIPT, PAGE_FILE, folder_files, smoke_banners
from mama_pipeline.resources import SettingsResource, StoreResource

GROUP = "leaderboard"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "mamaretrieval_leaderboard": "leaderboard llm multipassage.cutoffs evaluation.alpha evaluation.confidence evaluation.resamples evaluation.seed evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict evaluation.headline_measure evaluation.significance_measures multipassage.headline_measure multipassage.significance_measures release.held_out",
    "mamabench_leaderboard": "leaderboard llm.answer_grader llm.rubric_judge release.held_out systems.alpha systems.confidence systems.entries systems.resamples systems.seed",
}
SUBMISSION_SCORES = dg.AssetKey("submission_scores")  # the submissions area's asset (dynamic partitions)
TABLES = ("leaderboard", "leaderboard_comparisons", "leaderboard_per_query")
PARENT_OF_VARIANT = pl.col("query_id").str.replace(r"~[^~]*$", "")  # a variant falls on its parent's side


def write_leaderboard(s, store, benchmark: str, board: Leaderboard, specs, stats: Stats, rule) -> dict:
    """Store the tables (partition = benchmark), write the folder and the report page; the run metadata."""
    for table, df in zip(TABLES, (board.entries, board.comparisons, board.per_query)):
        store.write_table(table, df.with_columns(pl.lit(benchmark).alias("benchmark")), partition=benchmark)
    files = folder_files(
        benchmark,
        measures_of(specs),
        board.entries,
        board.comparisons,
        board.per_query,
        facts(benchmark, stats, rule, specs) | {"banners": smoke_banners(s, benchmark)},
    )
    folder = s.data_path / "leaderboard" / benchmark
    with atomic_folder(folder) as tmp:
        for rel, data in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
    page = s.data_path / "reports" / "leaderboard" / f"{benchmark}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / PAGE_FILE, page)
    for rel in files:  # the page's figures and manuscript tables beside it
        if rel.startswith(f"{MANUSCRIPT}/"):
            (page.parent / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / rel, page.parent / rel)
    top = board.entries.filter(pl.col("headline")).sort("track", "position")
    return {
        "folder": dg.MetadataValue.path(str(folder)),
        "page": dg.MetadataValue.path(str(page)),
        "page_url": dg.MetadataValue.url(page.as_uri()),
        "entries": top.height,
        "submissions": top.filter(pl.col("source") == lb_inputs.SUBMISSION).height,
        "comparisons": board.comparisons.height,
        "headline": md_table(
            top.select(
                "track",
                "measure",
                "position",
                "name",
                "source",
                "n",
                "mean",
                "ci_low",
                "ci_high",
                "judged_mean",
                "standing",
                "refused",
            ),
            200,
        ),
    }


def configured_grades(s, db) -> pl.DataFrame:
    """The configured systems' grades (``system_grades``, one partition per system); none when no system is
    configured, so the boards then hold the submissions only."""
    if not s.systems.names:
        return pl.DataFrame(
            schema={
                "system": pl.String,
                "item_id": pl.String,
                "track": pl.String,
                "status": pl.String,
                "score": pl.Float64,
                "invalid": pl.Boolean,
            }
        )
    return db.read_table("system_grades", partitions=s.systems.names)


def _stats(cfg, board) -> Stats:
    """The track's statistics settings (``cfg``), with the resamples of ``leaderboard`` (``board``) when set."""
    return Stats(board.resamples or cfg.resamples, cfg.seed, cfg.confidence, cfg.alpha)


@dg.asset(
    group_name=GROUP,
    deps=["per_query_results", "multipassage_per_query", SUBMISSION_SCORES],
    ins={
        "query_variants": dg.AssetIn("query_variants"),
        "robustness_per_query": dg.AssetIn(  # the variant side alone (lb_inputs.robustness_per_query)
            "robustness_per_query", metadata={"columns": ["retriever", "parent_id", "kind", "measure", "variant"]}
        ),
    },
    description="Leaderboards of mamaretrieval's main, robustness and multi-passage tracks: configured retrievers "
    "and every submission side by side, 95% bootstrap intervals, Judged@k beside every measure, paired tests of "
    "every two entries (Holm across the board) and the entries tied with the best; public vs held-out gap when "
    "release.held_out is on. Tables leaderboard*, <data_dir>/leaderboard/mamaretrieval, "
    "<data_dir>/reports/leaderboard/mamaretrieval.html.",
)
def mamaretrieval_leaderboard(
    settings: SettingsResource,
    store: StoreResource,
    query_variants: pl.DataFrame,
    robustness_per_query: pl.DataFrame,
) -> dg.MaterializeResult:
    s = settings.get()
    db = store.get()
    specs = retrieval_specs(s)
    needed = {t: {*spec.measures, *spec.judged.values()} for t, spec in specs.items()}
    tracks = {
        "main": lb_inputs.stored_per_query(db, "per_query_results", needed["main"]),
        "robustness": lb_inputs.robustness_per_query(robustness_per_query, query_variants, needed["robustness"]),
        "multipassage": lb_inputs.stored_per_query(db, "multipassage_per_query", needed["multipassage"]),
    }
    got = {
        t: lb_inputs.combine(lb_inputs.configured(v, "retriever"), lb_inputs.submissions(db, t))
        for t, v in tracks.items()
    }
    stats, rule = _stats(s.evaluation, s.leaderboard), s.release.held_out.rule("query_id")
    board = build_benchmark("mamaretrieval", got, specs, stats, rule, {"robustness": PARENT_OF_VARIANT})
    return dg.MaterializeResult(metadata=write_leaderboard(s, db, "mamaretrieval", board, specs, stats, rule))


@dg.asset(
    group_name=GROUP,
    deps=["system_grades", SUBMISSION_SCORES],
    description="Leaderboards of mamabench's mcq, short-answer and rubric tracks: configured systems and every "
    "submission side by side (the systems scoreboard's per-item scores; a (system, track) over a failure bound "
    "shows its refusal, no figure), 95% bootstrap intervals, paired tests of every two entries (Holm across the "
    "board) and the entries tied with the best; public vs held-out gap when release.held_out is on. Tables "
    "leaderboard*, <data_dir>/leaderboard/mamabench, <data_dir>/reports/leaderboard/mamabench.html.",
)
def mamabench_leaderboard(settings: SettingsResource, store: StoreResource) -> dg.MaterializeResult:
    from mama_pipeline.mamabench import split_key
    from mama_pipeline.systems import failure_stages, refusals

    s = settings.get()
    db = store.get()
    grades = configured_grades(s, db)
    refused = refusals(failure_stages(grades, s)) if grades.height else {}
    specs = answer_specs()
    got = {}
    for track in lb_inputs.ANSWER_TRACKS:
        mine = {system: why for (system, t), why in refused.items() if t == track}
        configured = lb_inputs.configured(lb_inputs.system_per_query(grades, track), "system", mine)
        # a refused (system, track) may have no scored item left at all: it is still listed, with its reason
        listed = {e.name for e in configured.entries}
        configured.entries += [
            Entry(f"{lb_inputs.CONFIGURED}/{n}", lb_inputs.CONFIGURED, n, why)
            for n, why in sorted(mine.items())
            if n not in listed
        ]
        got[track] = lb_inputs.combine(configured, lb_inputs.submissions(db, track))
    stats, rule = _stats(s.systems, s.leaderboard), s.release.held_out.rule("item_id")
    key = split_key("query_id")
    board = build_benchmark("mamabench", got, specs, stats, rule, {t: key for t in lb_inputs.ANSWER_TRACKS})
    return dg.MaterializeResult(metadata=write_leaderboard(s, db, "mamabench", board, specs, stats, rule))


ASSETS = [mamaretrieval_leaderboard, mamabench_leaderboard]
