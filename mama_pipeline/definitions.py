"""The one Dagster Definitions object: every area's assets, checks, sensors and schedules."""
import dagster as dg

from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings

load_settings()  # a wrong key or value fails here, at load time, with the key named

defs = dg.Definitions.merge(
    dg.Definitions(resources=shared_resources()),
)
