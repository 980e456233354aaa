"""The one Dagster Definitions object: the settings loaded once, every area built from them.

Each area's ``definitions.build_defs(settings)`` returns its assets, checks, sensors and schedules, with the
partitions of :mod:`mama_pipeline.partitions`; a wrong key or value in the configuration fails here, at load
time, with the key named. ``MAMA_CONFIG`` (or the bundled sample) is the file, for the definitions and for the
runs' ``settings`` resource alike.

Each asset carries its own code version (``common/code_version.py``: the modules its definition reaches, its
tables' SQL contracts, the settings it declares in its module's ``SETTINGS_READ``, the stack), so that a re-run
plans only what changed (``run_plan.changed_steps``).
"""

import os
import sys
from pathlib import Path

import dagster as dg

from mama_pipeline.calibration.definitions import build_defs as calibration
from mama_pipeline.clinician.definitions import build_defs as clinician
from mama_pipeline.common.code_version import versioned
from mama_pipeline.corpus.definitions import build_defs as corpus
from mama_pipeline.evaluation.definitions import build_defs as evaluation
from mama_pipeline.judging.definitions import build_defs as judging
from mama_pipeline.leaderboard.definitions import build_defs as leaderboard
from mama_pipeline.mamabench.definitions import build_defs as mamabench
from mama_pipeline.multipassage.definitions import build_defs as multipassage
from mama_pipeline.plan.definitions import build_defs as plan
from mama_pipeline.queries.definitions import build_defs as queries
from mama_pipeline.release.definitions import build_defs as release
from mama_pipeline.reports.definitions import build_defs as reports
from mama_pipeline.resources import shared_resources
from mama_pipeline.retrieval.definitions import build_defs as retrieval
from mama_pipeline.robustness.definitions import build_defs as robustness
from mama_pipeline.settings import PipelineSettings, load_settings
from mama_pipeline.submissions.definitions import build_defs as submissions
from mama_pipeline.systems.definitions import build_defs as systems

AREAS = (
    mamabench,
    calibration,
    corpus,
    queries,
    retrieval,
    judging,
    evaluation,
    multipassage,
    release,
    clinician,
    robustness,
    systems,
    submissions,
    leaderboard,
    plan,
    reports,
)


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """Every area's definitions from one settings object, the shared resources, and each asset's code version."""
    merged = dg.Definitions.merge(*(build(settings) for build in AREAS), dg.Definitions(resources=shared_resources()))
    return versioned(merged, settings.model_dump(mode="json"))


NO_DAGSTER_HOME = (
    "mama_pipeline: warning: DAGSTER_HOME is not set, so this run goes to a throwaway instance that records "
    "nothing (no run, no materialisation for the UI or for the next `mama-pipeline materialize`); set "
    "DAGSTER_HOME=$PWD/data/dagster_home (docs/running.md)"
)


class PartOfAStep(ValueError):
    """``--select`` takes some of the assets one step makes together (a multi-asset)."""


def dagster_cli_check(defs: dg.Definitions, argv: list[str], environ: dict[str, str]) -> str | None:
    """Under ``dagster asset materialize``: the warning line when DAGSTER_HOME is unset (None: nothing to say);
    :class:`PartOfAStep` with one line when ``--select`` takes part of the assets one step makes together."""
    if Path(argv[0]).name != "dagster" or argv[1:3] != ["asset", "materialize"]:
        return None
    select = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--select"), None)
    select = select or next((a.split("=", 1)[1] for a in argv if a.startswith("--select=")), None)
    if select:
        graph = defs.resolve_asset_graph()
        try:
            keys = dg.AssetSelection.from_coercible(select.split(",")).resolve(graph)
        except Exception:  # noqa: BLE001 - a selection Dagster cannot resolve: Dagster reports it next
            keys = set()
        for key in sorted(keys, key=lambda k: k.to_user_string()):
            together = {k for k in graph.get_execution_set_asset_and_check_keys(key) if isinstance(k, dg.AssetKey)}
            if together - keys:
                names = sorted(k.to_user_string() for k in together)
                raise PartOfAStep(
                    f"mama_pipeline: error: --select {select!r}: {', '.join(names)} are made together in one step; "
                    f"select them together (--select {','.join(sorted({*select.split(','), *names}))})"
                )
    return None if environ.get("DAGSTER_HOME") else NO_DAGSTER_HOME


defs = build_defs(load_settings())
try:
    if (_note := dagster_cli_check(defs, sys.argv, dict(os.environ))) is not None:
        print(_note, file=sys.stderr, flush=True)
except PartOfAStep as exc:  # one line instead of Dagster's DagsterInvalidSubsetError traceback
    print(exc, file=sys.stderr, flush=True)
    raise SystemExit(2) from None
