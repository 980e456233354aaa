"""One name per measure on every page, card and JSON file: the paper's label, from the measures' own definitions.

A measure is stored and configured under its ir_measures name (``Success(rel=3)@5``, ``RR(rel=3)``, ``nDCG@10``);
a reader sees the paper's label (``HR@5 lenient``, ``MRR lenient``, ``nDCG@10``), the one
:mod:`mama_pipeline.evaluation._scoreboard_measures` gives each measure of a plan. :func:`measure_names` maps the
first to the second for a plan; :func:`label_of` reads any stored name (the multi-passage track's ``AllIn@k[...]``
and ``AnyIn@k[...]`` keep their own names, which are their paper names); :func:`shown` puts the ir_measures name
beside the label where it helps (a table's column note, a JSON file's key list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mama_pipeline.evaluation._scoreboard_measures import FAMILIES, MeasurePlan, mamaretrieval_plan

_IR_FAMILY = {f.ir_name: f.key for f in FAMILIES if f.ir_name is not None}
_PAPER = {f.key for f in FAMILIES}
_NAME = re.compile(r"^(?P<family>[A-Za-z]+)(?:\(rel=(?P<rel>\d+)\))?(?:@(?P<k>\d+))?$")


def measure_names(plan: MeasurePlan) -> dict[str, str]:
    """ir_measures name -> paper label, for every measure of ``plan``."""
    return {m.name: m.label for m in plan.measures()}


def default_names(evaluation_settings) -> dict[str, str]:
    """:func:`measure_names` of the mamaretrieval plan of the evaluation settings (cutoffs, cuts, top grade)."""
    ev = evaluation_settings
    return measure_names(mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade))


def label_of(name: str, names: Mapping[str, str]) -> str:
    """The paper label of a stored measure name: from ``names`` (a plan's :func:`measure_names`), else the name
    itself when it is already a label (a paper family such as ``HR@5``, or a track's own measure such as
    ``AllIn@10[pieces]``); an ir_measures name outside the plan is an error, never shown raw."""
    if name in names:
        return names[name]
    if name in names.values():
        return name
    hit = _NAME.match(name)
    if hit and ((hit["family"] in _IR_FAMILY and hit["family"] not in _PAPER) or hit["rel"] is not None):
        raise ValueError(f"measure {name!r} is not in the plan's measures ({len(names)} known): no paper label")
    return name


def shown(name: str, names: Mapping[str, str]) -> str:
    """``HR@5 lenient (Success(rel=3)@5)``: the label with the ir_measures name beside it when they differ."""
    label = label_of(name, names)
    return label if label == name else f"{label} ({name})"


def known_labels(names: Mapping[str, str]) -> frozenset[str]:
    """Every label a page may show for these names (what the browser test accepts as a measure heading)."""
    return frozenset(names.values())


# The reader's name of each track (stored and configured under its id), beside the measures' labels.
TRACK_LABELS = {
    "main": "main",
    "robustness": "robustness",
    "multipassage": "multi-passage",
    "mcq": "multiple choice",
    "short_answer": "short answer",
    "rubric": "rubric",
}


def track_label(track: str) -> str:
    """The reader's name of a track id (``short_answer`` -> ``short answer``); an id outside
    :data:`TRACK_LABELS` reads with its underscores as spaces, never raw."""
    return TRACK_LABELS.get(track, track.replace("_", " "))
