"""The one Dagster Definitions object: the settings loaded once, every area built from them.

Each area's ``definitions.build_defs(settings)`` returns its assets, checks, sensors and schedules, with the
partitions of :mod:`mama_pipeline.partitions`; a wrong key or value in the configuration fails here, at load
time, with the key named. ``MAMA_CONFIG`` (or the bundled sample) is the file, for the definitions and for the
runs' ``settings`` resource alike.

Each asset carries its own code version (``common/code_version.py``: the modules its definition reaches, its
tables' SQL contracts, the settings it declares in its module's ``SETTINGS_READ``, the stack), so that a re-run
plans only what changed (``run_plan.changed_steps``).
"""

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


defs = build_defs(load_settings())
