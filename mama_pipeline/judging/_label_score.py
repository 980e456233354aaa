"""Score = D1 x (D2 + D3 + D4), computed here from the judge's verdicts.

Two documented rules turn an answer into a label:

* **Gate.** D1 false gives score 0 and D2, D3, D4 are stored as NULL: scoring
  stops at the gate, so values the model was made to emit there carry no meaning.
* **Structural rule (D3 >= 1 implies D2 >= 1).** An answer with D2 = 0 and
  D3 >= 1 is kept, flagged ``structural_violation``, its D3 as answered is kept
  in ``d3_answered``, and D3 is capped to 0 for the label and the score. The
  judge found no meaningful content, so there is no clinical guidance to act on;
  capping never raises a score.

The model's answer never supplies the score: the answer schema has no score
field and any extra field makes the answer invalid.
"""

from __future__ import annotations

from typing import Any

DIMENSIONS = ("d1_topic", "d2_meaningful", "d3_actionable", "d4_density")  # the rubric's; D1 gates the grades
GRADES = DIMENSIONS[1:]  # D2..D4, graded 0..2
RUBRIC_LABEL = (*DIMENSIONS, "score")  # a label's columns as the audits, agreements and boards compare them
LABEL_FIELDS = (*DIMENSIONS, "d3_answered", "structural_violation", "score")
OFF_TOPIC = {"d1_topic": False, **dict.fromkeys(GRADES, 0)}  # the verdicts of a chunk off the question's topic


def score_verdicts(verdicts: dict[str, Any]) -> dict[str, Any]:
    """The stored label for validated verdicts ``d1_topic``, ``d2_meaningful``, ``d3_actionable``, ``d4_density``."""
    d1 = verdicts["d1_topic"]
    d2, d3, d4 = (verdicts[k] for k in GRADES)
    if not isinstance(d1, bool) or any(type(v) is not int or not 0 <= v <= 2 for v in (d2, d3, d4)):
        raise ValueError(f"verdicts out of range: {verdicts!r}")
    if not d1:
        return dict(
            d1_topic=False,
            d2_meaningful=None,
            d3_actionable=None,
            d4_density=None,
            d3_answered=None,
            structural_violation=False,
            score=0,
        )
    violation = d3 >= 1 and d2 == 0
    d3_label = 0 if violation else d3
    return dict(
        d1_topic=True,
        d2_meaningful=d2,
        d3_actionable=d3_label,
        d4_density=d4,
        d3_answered=d3,
        structural_violation=violation,
        score=d2 + d3_label + d4,
    )
