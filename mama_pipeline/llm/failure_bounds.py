"""Failure-rate bounds of the LLM stages: a release is refused when a stage failed too often.

Each stage's bound is ``llm.<stage>.max_failure_rate`` (an answering system's:
``systems.entries[<name>].max_failure_rate``). A stage's failures are the units it
had to answer and could not (listed, never defaulted): pooled pairs without a label
(relevance or, on the multi-passage track, facts), sampled chunks whose gate answer
failed, items left unclassified, items a system did not answer (transport failures)
or whose answer the grader could not grade.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


class FailureBoundError(ValueError):
    """A release refused because an LLM stage failed more often than its bound; names the stage and counts."""


@dataclass(frozen=True)
class StageFailures:
    stage: str  # the LLM stage (llm.<stage>)
    unit: str  # what was asked: "pooled pairs", "sampled chunks", "items"
    failed: int
    total: int
    bound: float
    setting: str = ""  # the key that sets the bound; default llm.<stage>.max_failure_rate

    @property
    def rate(self) -> float:
        return self.failed / self.total if self.total else 0.0

    @property
    def over(self) -> bool:
        return self.rate > self.bound

    def describe(self) -> str:
        return (
            f"stage {self.stage}: {self.failed} of {self.total} {self.unit} failed ({self.rate:.2%}), "
            f"bound {self.bound:.2%} ({self.setting or f'llm.{self.stage}.max_failure_rate'})"
        )

    def metadata(self) -> dict[str, float | int]:
        return {
            f"{self.stage}/failed": self.failed,
            f"{self.stage}/{self.unit.replace(' ', '_')}": self.total,
            f"{self.stage}/failure_rate": round(self.rate, 5),
            f"{self.stage}/bound": self.bound,
        }


def judge_failures(
    pooled_pairs: pl.DataFrame | pl.LazyFrame, judgments: pl.DataFrame | pl.LazyFrame, bound: float
) -> StageFailures:
    """Pooled pairs the judge left without a label (frames, or lazy frames read by one query)."""
    keys = ["query_id", "chunk_id"]
    pool = pooled_pairs.lazy().select(keys).unique()
    failed = pool.join(judgments.lazy().select(keys), on=keys, how="anti")
    counts = pl.concat(
        [pool.select(pl.len().alias("pool")), failed.select(pl.len().alias("failed"))], how="horizontal"
    ).collect()
    return StageFailures("judge", "pooled pairs", counts["failed"].item(), counts["pool"].item(), bound)


def query_writer_failures(gate_decisions: pl.DataFrame, bound: float) -> StageFailures:
    """Sampled chunks whose query-writer answer failed (status llm_failed)."""
    failed = int((gate_decisions.get_column("status") == "llm_failed").sum())
    return StageFailures("query_writer", "sampled chunks", failed, gate_decisions.height, bound)


def classifier_failures(verdicts: pl.DataFrame, bound: float) -> StageFailures:
    """Items the scope classifier was asked about and could not classify."""
    asked = verdicts.filter(pl.col("via") == "classifier")
    failed = int((asked.get_column("status") != "ok").sum())
    return StageFailures("classifier", "items", failed, asked.height, bound)


def reference_classifier_failures(agreement_pairs: pl.DataFrame, bound: float) -> StageFailures:
    """Agreement-sample items the second classifier could not classify (its side ``b`` is null)."""
    failed = int(agreement_pairs.get_column("b").is_null().sum())
    return StageFailures("classifier_reference", "agreement items", failed, agreement_pairs.height, bound)


def system_failures(
    grades: pl.DataFrame,
    bounds: dict[str, float],
    grader_bounds: dict[str, tuple[str, float]],
) -> dict[tuple[str, str], list[StageFailures]]:
    """Per (system, track) of the grades: the items the system did not answer (status ``answer_failed``, a
    transport failure) against its bound (``bounds``: system -> bound), and the answers the track's grader
    could not grade (``grade_failed``) against the grader stage's bound (``grader_bounds``: track ->
    (stage, bound)). A system's own output that cannot be graded is a wrong answer (``invalid``), not a
    failure, and is not asked of the grader.
    """
    out = {}
    for (system, track), block in sorted(grades.group_by("system", "track"), key=lambda kv: kv[0]):
        status = block.get_column("status")
        unanswered = int((status == "answer_failed").sum())
        stages = [
            StageFailures(
                f"system:{system} {track}",
                "items",
                unanswered,
                block.height,
                bounds[system],
                f"systems.entries[{system}].max_failure_rate",
            )
        ]
        if track in grader_bounds:
            stage, grader_bound = grader_bounds[track]
            ungraded = int((status == "grade_failed").sum())
            asked = ungraded + int(((status == "graded") & ~block.get_column("invalid").fill_null(False)).sum())
            stages.append(
                StageFailures(
                    f"{stage} on system:{system} {track}",
                    "answers",
                    ungraded,
                    asked,
                    grader_bound,
                    f"llm.{stage}.max_failure_rate",
                )
            )
        out[(system, track)] = stages
    return out


def refuse_over_bound(release: str, version: str, stages: list[StageFailures]) -> None:
    """Raise :class:`FailureBoundError` naming every stage above its bound."""
    over = [s for s in stages if s.over]
    if over:
        raise FailureBoundError(
            f"release {release} {version} refused: "
            + "; ".join(s.describe() for s in over)
            + ". The failures are listed in the stage's assets; re-run the stage (failed answers are asked again) "
            "or raise the bound knowingly."
        )


def pair_label_failures(outcomes: pl.DataFrame, unit: str, bound: float) -> StageFailures:
    """Pairs the judge was asked and left ``failed`` (an outcomes table with a ``status`` column)."""
    failed = int((outcomes.get_column("status") == "failed").sum())
    return StageFailures("judge", unit, failed, outcomes.height, bound)
