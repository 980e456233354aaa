"""The evaluation report's line on clinician validation, read from the clinician area's stored agreement table.

The clinician area sits above evaluation (its corrected estimates use evaluation's measures), so this module
reads the ``clinician_agreement`` table by name and owns the name of the comparison against the clinicians'
majority, which :mod:`mama_pipeline.clinician.clinician_agreement` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from mama_pipeline.store import Store

AGREEMENT_TABLE = "clinician_agreement"  # asset and table other reports read
MAJORITY = "majority"  # the comparison against the clinicians' majority label


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def summary_note(metrics: pl.DataFrame) -> str | None:
    """One line for other reports: the judge against the clinicians' majority."""
    m = {
        r["metric"]: r
        for r in metrics.filter((pl.col("kind") == "relevance") & (pl.col("comparison") == MAJORITY)).to_dicts()
    }
    if not m or not m["lenient_agreement"]["pairs"]:
        return None
    return (
        f"Clinician validation: on {m['lenient_agreement']['pairs']} pairs the judge agrees with the clinicians' "
        f"majority at the lenient cut on {_fmt(m['lenient_agreement']['value'])}, at the strict cut on "
        f"{_fmt(m['strict_agreement']['value'])}, exact score {_fmt(m['exact_score_agreement']['value'])} "
        "(reports/clinician/agreement.html)."
    )


def clinician_notes(store: Store) -> list[str]:
    """Lines for other reports (none before the clinician agreement exists or when nothing was compared)."""
    if not store.table_exists(AGREEMENT_TABLE):
        return []
    note = summary_note(store.read_table(AGREEMENT_TABLE))
    return [note] if note else []
