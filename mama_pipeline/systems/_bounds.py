"""The failure bounds of answering systems and their graders, per (system, track).

A system's bound is its entry's ``max_failure_rate`` (the rule of the judge
stages): the share of a track's items it left unanswered (transport failures).
A grader's bound is its stage's (``llm.answer_grader``, ``llm.rubric_judge``):
the share of the system's answers it could not grade. Above either bound, that
system's scoreboard rows and comparisons on the track are refused.
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.llm.failure_bounds import StageFailures, system_failures

GRADER_STAGES = {"short_answer": "answer_grader", "rubric": "rubric_judge"}


def failure_stages(grades: pl.DataFrame, settings) -> dict[tuple[str, str], list[StageFailures]]:
    """Each (system, track) of the grades with its own and its grader's failures against their bounds."""
    bounds = {name: settings.systems.system(name).max_failure_rate for name in grades["system"].unique().to_list()}
    graders = {track: (stage, getattr(settings.llm, stage).max_failure_rate) for track, stage in GRADER_STAGES.items()}
    return system_failures(grades, bounds, graders)


def refusals(stages: dict[tuple[str, str], list[StageFailures]]) -> dict[tuple[str, str], str]:
    """(system, track) -> why its figures are refused, for each one with a failure count over its bound."""
    return {
        key: "; ".join(f.describe() for f in found if f.over)
        for key, found in stages.items()
        if any(f.over for f in found)
    }
