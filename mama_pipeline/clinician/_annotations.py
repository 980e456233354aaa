"""Clinicians' annotations from a Label Studio JSON export, one row per task and annotator.

The export is what the server's ``/api/projects/<id>/export?exportType=JSON``
returns and what a team annotating on another server hands over: a list of
tasks, each with ``data`` (carrying our ``task_key``) and ``annotations``.
A malformed export (a result entry that is not an object, an id that is not an
integer, ``data`` whose ids disagree with its task key) fails in one line with
the file (or URL) and task named. An annotation that is readable but unusable
(skipped, or D2-D4 missing after D1 "yes") is kept with its status and the
problem, never dropped; only ``labelled`` rows enter the agreement figures. The
relevance score follows the judge's rules
(:func:`mama_pipeline.judging._label_score.score_verdicts`).

Provenance travels with every row: ``synthetic`` is true when the annotation or
its task says ``"synthetic": true`` (the offline demo's made-up annotators mark
both; a Label Studio server keeps the task's ``meta``), whatever the file is
called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.clinician._labelling_config import CATEGORIES
from mama_pipeline.clinician._tasks import KINDS, RELEVANCE, relevance_key, scope_key
from mama_pipeline.common.input_errors import InputError
from mama_pipeline.judging import GRADES, OFF_TOPIC, score_verdicts
from mama_pipeline.store.table_schema import table_schema

LABEL_SCHEMA = table_schema("clinician_labels")


class ExportError(InputError):
    """A Label Studio export that cannot be read, with the file and task named."""


def read_export_file(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{path}: Label Studio export file does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{path}: not a JSON file: {exc}") from None
    return tasks


def _choice(result: list[dict[str, Any]], name: str) -> str | None:
    for r in result:
        if r.get("from_name") == name and r.get("type") == "choices":
            picked = (r.get("value") or {}).get("choices") or []
            return picked[0] if len(picked) == 1 else None
    return None


def _relevance_label(result: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    d1 = _choice(result, "d1_topic")
    if d1 not in ("yes", "no"):
        return {}, "D1 topic not answered"
    if d1 == "no":
        return score_verdicts(OFF_TOPIC), None
    grades = {d: _choice(result, d) for d in GRADES}
    missing = [d for d, v in grades.items() if v not in ("0", "1", "2")]
    if missing:
        return {}, f"D1 is yes but {', '.join(missing)} not answered"
    return score_verdicts({"d1_topic": True, **{d: int(v) for d, v in grades.items()}}), None


def _annotator(completed_by: Any) -> str | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id", completed_by.get("email"))
    return None if completed_by is None else str(completed_by)


def _flag(holder: dict[str, Any], where: str) -> bool:
    value = holder.get("synthetic", False)
    if not isinstance(value, bool):
        raise ExportError(f"{where}: synthetic is {value!r}, not true or false")
    return value


def _synthetic(task: dict[str, Any], annotation: dict[str, Any], where: str) -> bool:
    """Whether an annotation is made up: it or its task (``meta``) says ``"synthetic": true``."""
    meta = task.get("meta")
    return _flag(annotation, where) or (isinstance(meta, dict) and _flag(meta, where))


def _typed(value: Any, types: tuple[type, ...], what: str, where: str) -> Any:
    """``value`` when None or of ``types`` (bool never counts as a number), else an ExportError."""
    if value is not None and (type(value) not in types):
        raise ExportError(f"{where}: {what} {value!r} is not {' or '.join(t.__name__ for t in types)}")
    return value


def _task_ids(key: str, data: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    """(kind, ids) of a task whose data carries the ids its key was made from; refused when they disagree."""
    kind = key.split(":", 1)[0]
    ids = {k: data.get(k) for k in (("query_id", "chunk_id") if kind == RELEVANCE else ("item_id",))}
    made = relevance_key(*ids.values()) if kind == RELEVANCE else scope_key(*ids.values())
    if made != key:
        shown = ", ".join(f"{k} {v!r}" for k, v in ids.items())
        raise ExportError(f"{where}: data ({shown}) disagrees with its task_key {key!r}; was the export edited?")
    return kind, ids


def parse_export(tasks: Any, source: str) -> pl.DataFrame:
    """Rows of ``clinician_labels`` from one export; ``source`` (file or URL) names it in errors and rows."""
    if not isinstance(tasks, list):
        raise ExportError(f"{source}: a Label Studio JSON export is a list of tasks, got {type(tasks).__name__}")
    rows = []
    for i, task in enumerate(tasks):
        where = f"{source}: task {i}" + (f" (id {task.get('id')!r})" if isinstance(task, dict) else "")
        data = task.get("data") if isinstance(task, dict) else None
        key = data.get("task_key") if isinstance(data, dict) else None
        if not isinstance(key, str) or key.split(":", 1)[0] not in KINDS:
            raise ExportError(f"{where}: data.task_key is missing or not a mama_pipeline task key")
        kind, ids = _task_ids(key, data, where)
        task_id = _typed(task.get("id"), (int,), "task id", where)
        annotations = task.get("annotations") or []
        if not isinstance(annotations, list):
            raise ExportError(f"{where}: annotations is not a list")
        for j, a in enumerate(annotations):
            annotator = _annotator(a.get("completed_by")) if isinstance(a, dict) else None
            if annotator is None or not isinstance(a.get("result", []), list):
                raise ExportError(f"{where}: an annotation has no completed_by or a result that is not a list")
            at = f"{where}, annotation {j}"
            result = a.get("result") or []
            if any(not isinstance(r, dict) for r in result):
                raise ExportError(f"{at}: a result entry is not an object")
            row: dict[str, Any] = {
                "task_key": key,
                "kind": kind,
                "ls_task_id": task_id,
                "annotation_id": _typed(a.get("id"), (int,), "annotation id", at),
                "annotator_id": annotator,
                "created_at": _typed(a.get("created_at"), (str,), "created_at", at),
                "updated_at": _typed(a.get("updated_at"), (str,), "updated_at", at),
                "lead_time_s": _typed(a.get("lead_time"), (int, float), "lead_time", at),
                "query_id": None,
                "chunk_id": None,
                "item_id": None,
                **ids,
                "source": source,
                "synthetic": _synthetic(task, a, at),
            }
            if a.get("was_cancelled"):
                row.update(status="skipped", problem="the annotator skipped the task")
            elif kind == RELEVANCE:
                label, problem = _relevance_label(result)
                row.update(label, status="invalid" if problem else "labelled", problem=problem)
            else:
                category = _choice(result, "category")
                ok = category in CATEGORIES
                row.update(
                    category=category if ok else None,
                    status="labelled" if ok else "invalid",
                    problem=None if ok else f"scope category {category!r} is not one of {list(CATEGORIES)}",
                )
            rows.append(row)
    return pl.DataFrame(rows, schema=LABEL_SCHEMA, strict=False)


def latest_per_annotator(labels: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """One row per (task, annotator): the most recently updated annotation; returns (rows, superseded)."""
    if labels.is_empty():
        return labels, 0
    ranked = labels.sort(
        "task_key",
        "annotator_id",
        "updated_at",
        "annotation_id",
        descending=[False, False, True, True],
        nulls_last=True,
    )
    kept = ranked.unique(["task_key", "annotator_id"], keep="first", maintain_order=True)
    return kept.sort("task_key", "annotator_id"), labels.height - kept.height
