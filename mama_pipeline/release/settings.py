"""Configuration of the versioned releases and publishing."""
from mama_pipeline.settings_base import Section


class ReleaseSettings(Section):
    mamabench_version: str = "0.0.0-sample"
    mamaretrieval_version: str = "0.0.0-sample"
