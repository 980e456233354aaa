"""The pipeline's one configuration file, validated at load time.

Relative paths inside the file resolve against the file's folder; ``data_dir``
resolves against the working directory and ``MAMA_DATA_DIR`` overrides it.
``MAMA_CONFIG`` names the file; the default is the bundled-sample configuration.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError, model_validator

from mama_pipeline.calibration.settings import CalibrationSettings
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.llm.settings import LLMSettings
from mama_pipeline.mamabench.settings import MamabenchSettings
from mama_pipeline.queries.settings import QueriesSettings
from mama_pipeline.release.settings import ReleaseSettings
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.settings_base import Section
from mama_pipeline.systems.settings import SystemsSettings

SAMPLE_CONFIG = Path(__file__).resolve().parent / "sample_config.yaml"


class ConfigError(ValueError):
    """A configuration file that cannot be used, with the offending key named."""


class PipelineSettings(Section):
    data_dir: str = "data"
    llm: LLMSettings = LLMSettings()
    mamabench: MamabenchSettings = MamabenchSettings()
    calibration: CalibrationSettings = CalibrationSettings()
    corpus: CorpusSettings = CorpusSettings()
    queries: QueriesSettings = QueriesSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    judging: JudgingSettings = JudgingSettings()
    evaluation: EvaluationSettings = EvaluationSettings()
    release: ReleaseSettings = ReleaseSettings()
    systems: SystemsSettings = SystemsSettings()

    # set by load_settings, not by the file
    config_dir: str = "."

    @model_validator(mode="after")
    def _systems_name_retrievers(self) -> "PipelineSettings":
        self.systems.check_retrievers({r.name: r.kind for r in self.retrieval.retrievers})
        return self

    def resolve(self, path: str) -> Path:
        """An input path from the file, resolved against the file's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.config_dir) / p

    @property
    def data_path(self) -> Path:
        return Path(os.environ.get("MAMA_DATA_DIR") or self.data_dir).expanduser().resolve()

    def release_path(self, name: str, version: str) -> Path:
        """The folder of one release: <data_dir>/releases/<name>/<version>."""
        return self.data_path / "releases" / name / version

    @property
    def db_path(self) -> Path:
        return self.data_path / "mama.duckdb"


def config_path_from_env() -> Path:
    return Path(os.environ.get("MAMA_CONFIG") or SAMPLE_CONFIG).resolve()


def load_settings(path: str | os.PathLike[str] | None = None) -> PipelineSettings:
    path = Path(path).resolve() if path else config_path_from_env()
    return _load(path, path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=8)
def _load(path: Path, _mtime: int) -> PipelineSettings:
    if not path.exists():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration file {path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration file {path}: top level must be a mapping")
    if "config_dir" in raw:
        raise ConfigError(f"configuration file {path}: key 'config_dir' is set by the loader, not the file")
    try:
        return PipelineSettings.model_validate({**raw, "config_dir": str(path.parent)})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"key '{key}': {err['msg']}")
        raise ConfigError(f"configuration file {path}:\n  " + "\n  ".join(lines)) from None
