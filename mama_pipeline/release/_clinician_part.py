"""The clinician-validated subset as a configuration of each release (mamaretrieval: relevance, mamabench: scope).

Provenance decides, not a file name, and it is judged on every label the card
shows: the validated tasks, and every label behind the agreement tables and the
corrected figures (``clinician_labels``), validated or not (with
``clinician.min_annotations`` above the annotators per task nothing is
validated, yet the tables show every annotator). A subset with any synthetic
label among them is refused unless ``clinician.release_synthetic_labels``
allows it, and then its card and its ``synthetic`` column say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.clinician import METRIC_SCHEMA, annotators, is_synthetic, markdown_section
from mama_pipeline.common.held_out import configuration_split
from mama_pipeline.judging import RUBRIC_LABEL
from mama_pipeline.release._configurations import ReleaseConfiguration
from mama_pipeline.release._mamaretrieval import ReleaseError
from mama_pipeline.store import Store

if TYPE_CHECKING:
    from mama_pipeline.settings import PipelineSettings

NAME = "clinician_validated"
LABELS = "clinician_labels"  # every label, validated or not: what the agreement and estimate tables rest on
LAYOUT = {  # release -> (kind, file, columns)
    "mamaretrieval": (
        "relevance",
        "data/clinician_validated.parquet",
        [
            "query_id",
            "chunk_id",
            "annotations",
            "tie",
            "tied_on",
            *RUBRIC_LABEL,
            "synthetic",
        ],
    ),
    "mamabench": (
        "scope",
        "data/clinician_validated/test.jsonl",
        ["item_id", "annotations", "tie", "tied_on", "category", "synthetic"],
    ),
}


def _refusal(validated: pl.DataFrame, labels: pl.DataFrame | None, kind: str, settings: PipelineSettings) -> str | None:
    """Why the subset must not ship (None when it may); ``labels``: every label the card's tables rest on."""
    c = settings.clinician
    if "synthetic" not in validated.columns:
        return "clinician_validated has no synthetic column (built before label provenance); re-materialise it"
    mine = validated.filter(pl.col("kind") == kind)
    synthetic = int(mine["synthetic"].sum())
    if synthetic and not c.release_synthetic_labels:
        return (
            f"{synthetic} of {mine.height} {kind} tasks were adjudicated from SYNTHETIC annotations (made up, "
            "not clinicians'); set clinician.release_synthetic_labels: true to release them marked synthetic"
        )
    shown = labels.filter(pl.col("kind") == kind) if labels is not None else None
    made_up = int(shown["synthetic"].sum()) if shown is not None and shown.height else 0
    if made_up and not c.release_synthetic_labels:
        return (
            f"{made_up} of the {shown.height} {kind} labels behind the card's agreement and estimate tables are "
            "SYNTHETIC (made up, not clinicians'), validated or not; set clinician.release_synthetic_labels: true "
            "to release them marked synthetic"
        )
    fewest = mine["annotations"].min()
    if fewest is not None and fewest < c.min_annotations:
        return (
            f"a task holds {fewest} annotations, fewer than clinician.min_annotations = {c.min_annotations}; "
            "re-materialise clinician_validated"
        )
    return None


def configurations(release: str, store: Store, settings: PipelineSettings) -> list[ReleaseConfiguration]:
    if release not in LAYOUT or not store.table_exists(NAME):
        return []
    kind, path, columns = LAYOUT[release]
    validated = store.read_table(NAME)
    labels = store.read_table(LABELS) if store.table_exists(LABELS) else None
    why = _refusal(validated, labels, kind, settings)
    if why:
        raise ReleaseError(f"release {release}: configuration {NAME} refused: {why}")
    frame = (
        validated.filter(pl.col("kind") == kind)
        .select(columns)
        .sort(columns[:2] if kind == "relevance" else columns[:1])
    )
    metrics = store.read_table("clinician_agreement") if store.table_exists("clinician_agreement") else None
    synthetic = is_synthetic(frame) or (labels is not None and is_synthetic(labels.filter(pl.col("kind") == kind)))
    n = settings.clinician.min_annotations
    estimates = store.read_table("clinician_estimates") if store.table_exists("clinician_estimates") else None
    if estimates is not None and "tied" not in estimates.columns:
        raise ReleaseError(
            f"release {release}: configuration {NAME} refused: clinician_estimates has no tied column (built before "
            "the ties were counted); re-materialise it"
        )
    held, split, shown = None, None, validated
    rule = settings.release.held_out.rule("query_id")
    if release == "mamaretrieval" and rule.active:  # mamabench splits its configurations by item_id itself
        frame, held = rule.split(frame)
        split = configuration_split("tasks", "the query_id of the task's pair", frame.height, held.height)
        shown = validated.filter((pl.col("kind") != kind) | pl.col("query_id").is_in(frame["query_id"].implode()))
    section = markdown_section(
        metrics if metrics is not None else pl.DataFrame(schema=METRIC_SCHEMA),
        shown,
        kind,
        synthetic,
        n,
        estimates,
        labels,
    )
    if split:
        section += (
            f"\nThe {held.height} tasks whose query is held out are not in this folder (held-out split); "
            f"the agreement and estimate figures above are of all {frame.height + held.height} tasks.\n"
        )
    what = "(query, chunk) pairs" if kind == "relevance" else "items' scope categories"
    return [
        ReleaseConfiguration(
            NAME,
            path,
            f"{what} labelled by at least {annotators(n, synthetic)}, majority label; ties listed",
            frame,
            section,
            held_out_frame=held,
            split=split,
        )
    ]
