"""The one Dagster Definitions object: every area's assets, checks, sensors and schedules."""
import dagster as dg

from mama_pipeline.calibration.definitions import defs as calibration
from mama_pipeline.corpus.definitions import defs as corpus
from mama_pipeline.evaluation.definitions import defs as evaluation
from mama_pipeline.judging.definitions import defs as judging
from mama_pipeline.mamabench.definitions import defs as mamabench
from mama_pipeline.queries.definitions import defs as queries
from mama_pipeline.resources import shared_resources
from mama_pipeline.retrieval.definitions import defs as retrieval
from mama_pipeline.settings import load_settings

load_settings()  # a wrong key or value fails here, at load time, with the key named

defs = dg.Definitions.merge(
    mamabench,
    calibration,
    corpus,
    queries,
    retrieval,
    judging,
    evaluation,
    dg.Definitions(resources=shared_resources()),
)
