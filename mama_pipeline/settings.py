"""The pipeline's one configuration file, validated at load time.

Relative paths inside the file resolve against the file's folder, bundled
defaults (``bundled:...``) against the package; ``data_dir`` resolves against the
working directory and ``MAMA_DATA_DIR`` overrides it.
``MAMA_CONFIG`` names the file; the default is the bundled-sample configuration.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError, model_validator

from mama_pipeline.calibration.settings import CalibrationSettings
from mama_pipeline.circularity.settings import CircularitySettings, check_families
from mama_pipeline.clinician.settings import ClinicianSettings
from mama_pipeline.common.input_errors import InputError, read_text
from mama_pipeline.common.settings_base import Section, resolve_path
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.leaderboard.settings import LeaderboardSettings
from mama_pipeline.llm.settings import LLMSettings
from mama_pipeline.mamabench.settings import MamabenchSettings
from mama_pipeline.multipassage.settings import MultipassageSettings
from mama_pipeline.queries.settings import QueriesSettings
from mama_pipeline.release.settings import ReleaseSettings
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.robustness.settings import RobustnessSettings
from mama_pipeline.systems.settings import SystemsSettings

SAMPLE_CONFIG = Path(__file__).resolve().parent / "sample_config.yaml"


class ConfigError(InputError):
    """A configuration file that cannot be used, with the offending key (or line) named, in one line."""


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
    multipassage: MultipassageSettings = MultipassageSettings()
    release: ReleaseSettings = ReleaseSettings()
    clinician: ClinicianSettings = ClinicianSettings()
    robustness: RobustnessSettings = RobustnessSettings()
    systems: SystemsSettings = SystemsSettings()
    circularity: CircularitySettings = CircularitySettings()
    leaderboard: LeaderboardSettings = LeaderboardSettings()

    # set by load_settings, not by the file
    config_dir: str = "."

    @model_validator(mode="after")
    def _systems_name_retrievers(self) -> PipelineSettings:
        self.systems.check_retrievers({r.name: r.kind for r in self.retrieval.retrievers})
        check_families(self)
        return self

    def resolve(self, path: str) -> Path:
        """An input path from the file (against the file's folder) or a bundled default (against the package)."""
        return resolve_path(path, Path(self.config_dir))

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
    try:
        text = read_text(path, "configuration file")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{where}: configuration file is not valid YAML: {problem}") from None
    if raw is None:
        raise ConfigError(f"{path}: configuration file is empty (or only comments): nothing to run on")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: configuration file: top level must be a mapping, not {type(raw).__name__}")
    if "config_dir" in raw:
        raise ConfigError(f"{path}: configuration file: key 'config_dir' is set by the loader, not the file")
    try:
        return PipelineSettings.model_validate({**raw, "config_dir": str(path.parent)})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"key '{key}': {err['msg']}")
        raise ConfigError(f"{path}: configuration file: " + "; ".join(lines)) from None
