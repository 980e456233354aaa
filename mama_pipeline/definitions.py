"""The one Dagster Definitions object: every area's assets, checks, sensors and schedules."""
import dagster as dg

from mama_pipeline import settings as _settings
from mama_pipeline.calibration import definitions as calibration
from mama_pipeline.clinician import definitions as clinician
from mama_pipeline.corpus import definitions as corpus
from mama_pipeline.evaluation import definitions as evaluation
from mama_pipeline.judging import definitions as judging
from mama_pipeline.mamabench import definitions as mamabench
from mama_pipeline.multipassage import definitions as multipassage
from mama_pipeline.plan import definitions as plan
from mama_pipeline.queries import definitions as queries
from mama_pipeline.release import definitions as release
from mama_pipeline.reports import definitions as reports
from mama_pipeline.resources import shared_resources
from mama_pipeline.retrieval import definitions as retrieval
from mama_pipeline.robustness import definitions as robustness
from mama_pipeline.systems import definitions as systems

_settings.load_settings()  # a wrong key or value fails here, at load time, with the key named

defs = dg.Definitions.merge(
    mamabench.defs,
    calibration.defs,
    corpus.defs,
    queries.defs,
    retrieval.defs,
    judging.defs,
    evaluation.defs,
    multipassage.defs,
    release.defs,
    clinician.defs,
    robustness.defs,
    systems.defs,
    plan.defs,
    reports.defs,
    dg.Definitions(resources=shared_resources()),
)
