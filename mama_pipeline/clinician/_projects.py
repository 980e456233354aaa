"""Tasks out to Label Studio projects and annotations back, idempotently.

One project per kind, found by title (``<prefix> relevance``, ``<prefix>
scope``). Pushing skips tasks whose ``task_key`` the project already holds, so
pushing twice creates no duplicates. The token is checked before anything is
created, and a project created by a push that then fails is deleted again: no
partial project is left behind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.clinician._annotations import read_export_file
from mama_pipeline.clinician._label_studio import LabelStudio, LabelStudioError, token_from_env
from mama_pipeline.clinician._labelling_config import relevance_config, scope_config
from mama_pipeline.clinician._synthetic import SOURCE as SYNTHETIC_SOURCE
from mama_pipeline.clinician._synthetic import synthetic_export
from mama_pipeline.clinician._tasks import KINDS, RELEVANCE, SCOPE
from mama_pipeline.clinician.settings import ClinicianSettings

DESCRIPTION = {
    RELEVANCE: "mama_pipeline clinician validation: grade each (question, passage) pair on D1-D4 as defined "
    "beside it. The LLM judge's labels are not shown.",
    SCOPE: "mama_pipeline clinician validation: give each mamabench item its scope category as defined beside it. "
    "The classifier's verdict is not shown.",
}


def label_config(kind: str) -> str:
    return relevance_config() if kind == RELEVANCE else scope_config()


def project_title(prefix: str, kind: str) -> str:
    return f"{prefix} {kind}"


@dataclass(frozen=True)
class PushResult:
    kind: str
    project_id: int
    created: bool
    pushed: int
    already_there: int

    def project_url(self, base: str) -> str:
        return f"{base}/projects/{self.project_id}/data"


def push_tasks(ls: LabelStudio, prefix: str, kind: str, tasks: list[dict[str, Any]], overlap: int = 2) -> PushResult:
    """Create the kind's project when missing (every task served to ``overlap`` annotators) and add the tasks it
    does not hold yet."""
    ls.whoami()  # a wrong URL or token fails here, before anything is created
    title = project_title(prefix, kind)
    config = label_config(kind)
    project = ls.project_by_title(title)
    created = project is None
    if created:
        project = ls.create_project(title, DESCRIPTION[kind], config, overlap)
    try:
        if not created and project.get("label_config") != config:
            ls.update_label_config(project["id"], config)
        held = {t["data"].get("task_key") for t in ls.tasks(project["id"])}
        new = [t for t in tasks if t["data"]["task_key"] not in held]
        pushed = ls.import_tasks(project["id"], new)
    except BaseException as exc:
        if created:
            try:
                ls.delete_project(project["id"])
            except LabelStudioError as cleanup:
                raise LabelStudioError(
                    f"{exc}; and the new project {project['id']} could not be removed: {cleanup}"
                ) from exc
        raise
    return PushResult(kind, int(project["id"]), created, pushed, len(tasks) - len(new))


def pull_export(ls: LabelStudio, prefix: str, kind: str) -> tuple[int, list[dict[str, Any]]] | None:
    """(project id, JSON export) of the kind's project; None when the project does not exist yet."""
    project = ls.project_by_title(project_title(prefix, kind))
    if project is None:
        return None
    return int(project["id"]), ls.export(project["id"])


def annotations_fingerprint(exports: dict[str, list[dict[str, Any]]]) -> str:
    """Changes when an annotation is added, edited, skipped or deleted in any project, or its provenance (the
    ``synthetic`` mark on it or its task) changes."""
    seen = sorted(
        (
            kind,
            str(t.get("data", {}).get("task_key")),
            a.get("id"),
            a.get("updated_at"),
            bool(a.get("was_cancelled")),
            repr(a.get("synthetic")),
            repr((t.get("meta") or {}).get("synthetic")),
        )
        for kind, tasks in exports.items()
        for t in tasks
        for a in t.get("annotations") or []
    )
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:16]


def annotations_version(c: ClinicianSettings, resolve: Callable[[str], Path]) -> str:
    """The data version of the annotations: ``server:`` and their fingerprint on the Label Studio server, else
    the configured export files' fingerprints; made-up annotations (the offline demo) follow from the tasks and
    settings alone."""
    from mama_pipeline.common.observed_inputs import path_fingerprint

    if c.label_studio_url:
        exports = read_exports(c, resolve)
        return "server:" + annotations_fingerprint({kind: tasks for kind, (_, tasks) in exports.items()})
    files = {kind: getattr(c.exports, kind) for kind in KINDS if getattr(c.exports, kind)}
    return json.dumps({kind: path_fingerprint(resolve(path)) for kind, path in files.items()}, sort_keys=True)


def read_exports(
    c: ClinicianSettings, resolve: Callable[[str], Path], tasks: pl.DataFrame | None = None
) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """kind -> (source, JSON export): from the configured server, else from the configured export files, else
    (offline demo, ``synthetic_annotators`` set) made-up annotations of ``tasks``."""
    out: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    if c.label_studio_url:
        with LabelStudio(c.label_studio_url, token_from_env(c.token_env, c.label_studio_url), c.timeout_s) as ls:
            ls.whoami()
            for kind in KINDS:
                got = pull_export(ls, c.project_prefix, kind)
                if got is not None:
                    out[kind] = (f"{c.label_studio_url}/projects/{got[0]}", got[1])
        return out
    for kind in KINDS:
        path = getattr(c.exports, kind)
        if path:
            p = resolve(path)
            out[kind] = (str(p), read_export_file(p))
        elif c.synthetic_annotators and tasks is not None:
            out[kind] = (
                SYNTHETIC_SOURCE.format(kind=kind),
                synthetic_export(tasks, kind, c.synthetic_annotators, c.seed),
            )
    return out
