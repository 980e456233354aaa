"""Asset checks of the multipassage group."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.shared_inputs import CHUNKS
from mama_pipeline.llm.failure_bounds import pair_label_failures
from mama_pipeline.multipassage._failures import FACTS_UNIT, RELEVANCE_UNIT, failure_listing
from mama_pipeline.multipassage._question_ids import ID_RE
from mama_pipeline.resources import SettingsResource


@dg.asset_check(
    asset=dg.AssetKey("multipassage_candidates"),
    additional_ins={"chunks": CHUNKS},
    description="Every set names 2 or 3 distinct chunks of the corpus; kept set ids are unique; dropped sets "
    "carry a reason and only dropped sets do.",
)
def candidates_are_well_formed(multipassage_candidates: pl.DataFrame, chunks: pl.DataFrame) -> dg.AssetCheckResult:
    c = multipassage_candidates
    known = set(chunks["chunk_id"].to_list())
    kept = c.filter(pl.col("status") != "dropped")
    problems = {
        "unknown_chunks": sum(any(x not in known for x in ids) for ids in c["chunk_ids"].to_list()),
        "repeated_chunks": sum(len(set(ids)) != len(ids) for ids in c["chunk_ids"].to_list()),
        "bad_sizes": kept.filter(
            ~pl.col("size").is_in([2, 3]) | (pl.col("chunk_ids").list.len() != pl.col("size"))
        ).height,
        "duplicate_kept_sets": kept.height - kept["set_id"].n_unique(),
        "reason_mismatch": c.filter((pl.col("status") == "dropped") != pl.col("drop_reason").is_not_null()).height,
    }
    return dg.AssetCheckResult(passed=not any(problems.values()), metadata={"candidates": c.height, **problems})


@dg.asset_check(
    asset=dg.AssetKey("multipassage_questions"),
    additional_ins={"multipassage_decisions": dg.AssetIn("multipassage_decisions")},
    description="Only questions whose verification passed are released: each question's set is 'kept' in the "
    "decisions; ids are unique, well formed and one per set.",
)
def only_verified_questions(
    multipassage_questions: pl.DataFrame, multipassage_decisions: pl.DataFrame
) -> dg.AssetCheckResult:
    q = multipassage_questions
    kept = set(multipassage_decisions.filter(pl.col("status") == "kept")["set_id"].to_list())
    ids = q["query_id"].to_list()
    problems = {
        "not_verified": sum(sid not in kept for sid in q["set_id"].to_list()),
        "verified_missing": len(kept - set(q["set_id"].to_list())),
        "bad_ids": sum(ID_RE.match(x or "") is None for x in ids),
        "duplicate_ids": len(ids) - len(set(ids)),
        "duplicate_sets": q.height - q["set_id"].n_unique(),
    }
    return dg.AssetCheckResult(passed=not any(problems.values()), metadata={"questions": q.height, **problems})


@dg.asset_check(
    asset=dg.AssetKey("multipassage_decisions"),
    description="Every sampled set got valid answers from the writer and the verifier; failures are listed.",
)
def no_llm_failures(multipassage_decisions: pl.DataFrame) -> dg.AssetCheckResult:
    failed = multipassage_decisions.filter(pl.col("status").is_in(["writer_failed", "verifier_failed"]))
    return dg.AssetCheckResult(
        passed=failed.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"failed": failed.height, "failures": md_table(failed.select("set_id", "status", "error"))},
    )


@dg.asset_check(
    asset=dg.AssetKey("multipassage_labels"),
    description="Every chunk of every question's set is in the pool and was sent to the judge; judge failures "
    "are counted (warning; their bound is relevance_failures_under_bound).",
    additional_ins={"questions": dg.AssetIn("multipassage_questions")},
)
def pieces_pooled_and_labelled(multipassage_labels: pl.DataFrame, questions: pl.DataFrame) -> dg.AssetCheckResult:
    pieces = questions.select("query_id", pl.col("chunk_ids").alias("chunk_id")).explode("chunk_id")
    missing = pieces.join(multipassage_labels.select("query_id", "chunk_id"), on=["query_id", "chunk_id"], how="anti")
    failed = multipassage_labels.filter(pl.col("status") == "failed")
    severity = dg.AssetCheckSeverity.ERROR if missing.height else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(
        passed=missing.is_empty() and failed.is_empty(),
        severity=severity,
        metadata={
            "pieces_not_pooled": missing.height,
            "judge_failures": failed.height,
        },
    )


def _bound(settings: SettingsResource, outcomes: pl.DataFrame, unit: str) -> dg.AssetCheckResult:
    stage = pair_label_failures(outcomes, unit, settings.get().llm.judge.max_failure_rate)
    return dg.AssetCheckResult(
        passed=not stage.over, metadata={**stage.metadata(), "summary": stage.describe(), **failure_listing(outcomes)}
    )


@dg.asset_check(
    asset=dg.AssetKey("multipassage_labels"),
    blocking=True,
    description="The share of pooled pairs the judge left without a relevance label stays under "
    "llm.judge.max_failure_rate (failed pairs listed); blocks the scoreboard (the release refuses too).",
)
def relevance_failures_under_bound(
    settings: SettingsResource, multipassage_labels: pl.DataFrame
) -> dg.AssetCheckResult:
    return _bound(settings, multipassage_labels, RELEVANCE_UNIT)


@dg.asset_check(
    asset=dg.AssetKey("multipassage_fact_labels"),
    blocking=True,
    description="The share of pooled pairs the judge left without a fact label stays under "
    "llm.judge.max_failure_rate (failed pairs listed); blocks the scoreboard (the release refuses too).",
)
def fact_failures_under_bound(
    settings: SettingsResource, multipassage_fact_labels: pl.DataFrame
) -> dg.AssetCheckResult:
    return _bound(settings, multipassage_fact_labels, FACTS_UNIT)


@dg.asset_check(
    asset=dg.AssetKey("multipassage_scoreboard"),
    additional_ins={"questions": dg.AssetIn("multipassage_questions")},
    description="Every retriever's tier-'all' means cover every question.",
)
def scoreboard_covers_every_question(
    multipassage_scoreboard: pl.DataFrame, questions: pl.DataFrame
) -> dg.AssetCheckResult:
    overall = multipassage_scoreboard.filter(pl.col("tier") == "all")
    short = overall.filter(pl.col("n_queries") != questions.height).height
    return dg.AssetCheckResult(passed=short == 0, metadata={"rows_not_covering_all_questions": short})


CHECKS = [
    candidates_are_well_formed,
    only_verified_questions,
    no_llm_failures,
    pieces_pooled_and_labelled,
    relevance_failures_under_bound,
    fact_failures_under_bound,
    scoreboard_covers_every_question,
]
