"""The pipeline's one configuration file, validated at load time.

Relative paths inside the file resolve against the file's folder, bundled
defaults (``bundled:...``) against the package; ``data_dir`` resolves against the
working directory and ``MAMA_DATA_DIR`` overrides it.
``MAMA_CONFIG`` names the file; the default is the bundled-sample configuration.
"""

from __future__ import annotations

import os
import re
import typing
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError, model_validator

from mama_pipeline.calibration.settings import CalibrationSettings
from mama_pipeline.circularity.settings import CircularitySettings
from mama_pipeline.clinician.settings import ClinicianSettings
from mama_pipeline.common.input_errors import InputError, read_text
from mama_pipeline.common.settings_base import Section, resolve_path
from mama_pipeline.common.yaml_keys import key_line, near_miss
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.leaderboard.settings import LeaderboardSettings
from mama_pipeline.llm.settings import LLMSettings, StageSettings
from mama_pipeline.mamabench.settings import MamabenchSettings
from mama_pipeline.multipassage.settings import MultipassageSettings, embedding_kinds
from mama_pipeline.queries.settings import QueriesSettings
from mama_pipeline.release.settings import ReleaseSettings
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.robustness.settings import RobustnessSettings
from mama_pipeline.systems.settings import SystemsSettings

SAMPLE_CONFIG = Path(__file__).resolve().parent / "sample_config.yaml"
MOVED_KEYS = {  # a key an older file may still hold -> where it is now
    ("release", "corpus_sensor_interval_s"): "corpus.sensor_interval_s",
    ("release", "mamabench_sources_cron"): "mamabench.sources_cron",
    ("judging", "max_failure_rate"): "llm.judge.max_failure_rate (each LLM stage has its own bound)",
}


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

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: typing.Any) -> typing.Any:
        for (section, key), now in MOVED_KEYS.items():
            if isinstance(data, dict) and isinstance(data.get(section), dict) and key in data[section]:
                raise ValueError(f"{section}.{key}: moved to {now}")
        return data

    @model_validator(mode="after")
    def _systems_name_retrievers(self) -> PipelineSettings:
        self.systems.check_retrievers({r.name: r.kind for r in self.retrieval.retrievers})
        self.circularity.check_families(self.retrieval.retriever_names, self.systems.names)
        return self

    @model_validator(mode="after")
    def _names_across_sections(self) -> PipelineSettings:
        """Names one section gives another, where the file writes them: a retriever, a tier. (A default name the
        file leaves alone, multipassage.dense_retriever's "minilm", is checked by `doctor` and by its step.)"""
        retrievers = {r.name: r.kind for r in self.retrieval.retrievers}
        mp = self.multipassage
        if "dense_retriever" in mp.model_fields_set and retrievers.get(mp.dense_retriever) not in embedding_kinds():
            kind = retrievers.get(mp.dense_retriever)
            found = f"is a {kind} retriever" if kind else f"is not in retrieval.retrievers {sorted(retrievers)}"
            raise ValueError(
                f"multipassage.dense_retriever: {mp.dense_retriever!r} {found}; it must name an embedding "
                f"retriever (kind {' or '.join(embedding_kinds())})"
            )
        for key, names, known, what in (
            ("multipassage.sets_per_source", mp.sets_per_source, self.corpus.tiers, "corpus.tiers"),
            ("multipassage.pool_retrievers", mp.pool_retrievers, retrievers, "retrieval.retrievers"),
            ("robustness.retrievers", self.robustness.retrievers, retrievers, "retrieval.retrievers"),
        ):
            unknown = sorted(set(names) - set(known))
            if unknown:
                raise ValueError(f"{key}: {unknown} are not in {what} {sorted(known)}")
        return self

    @model_validator(mode="after")
    def _every_stage_served(self) -> PipelineSettings:
        unserved = [k for k, st in self.llm_stages() if not st.base_urls and not st.embedded]
        if unserved:
            raise ValueError(
                f"{unserved[0]}: no endpoint for LLM stage(s) {', '.join(unserved)}: set base_urls and model "
                "(your server), or embedded: true to serve the stage with the embedded SmolLM2-135M smoke-test "
                "model (its answers are not clinical judgements)"
            )
        unnamed = [k for k, st in self.llm_stages() if st.base_urls and not st.model]
        if unnamed:
            raise ValueError(
                f"{unnamed[0]}: base_urls set without model for {', '.join(unnamed)}: name the model served"
            )
        return self

    def llm_stages(self) -> list[tuple[str, StageSettings]]:
        """Every LLM stage with its dotted key: ``llm.<stage>`` and ``systems.entries.<i>`` (an answering system)."""
        return [(f"llm.{k}", st) for k, st in self.llm.stages()] + [
            (f"systems.entries.{i}", e) for i, e in enumerate(self.systems.entries)
        ]

    def embedded_stages(self) -> list[str]:
        """The dotted keys of the stages the embedded smoke-test model serves (empty in a production build)."""
        return [k for k, st in self.llm_stages() if st.embedded]

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
        raise ConfigError(_describe(path, text, raw, exc)) from None


KEY_AT_START = re.compile(r"^([A-Za-z_][\w.]*): ")


def _describe(path: Path, text: str, raw: dict, exc: ValidationError) -> str:
    """One line: the file, the line of the first offending key, each error with its key and line, and a
    suggestion for a misspelt key."""
    parts, first_line = [], None
    for err in exc.errors():
        loc, msg = _file_keys(raw, list(err["loc"])), err["msg"].removeprefix("Value error, ")
        if not loc and (m := KEY_AT_START.match(msg)):  # a check across sections names its key first
            loc = [int(p) if p.isdigit() else p for p in m.group(1).split(".")]
            msg = msg[m.end() :]
        found = key_line(text, loc) if loc else None
        first_line = first_line or (found and found[0])
        if err["type"] == "extra_forbidden" and (guess := near_miss(str(loc[-1]), _valid_keys(loc[:-1]))):
            msg += f"; did you mean '{guess}'?"
        key = ".".join(str(p) for p in loc) or "(top level)"
        where = (
            "" if found is None else f" (line {found[0]})" if found[1] else f" (absent; its section: line {found[0]})"
        )
        parts.append(f"key '{key}'{where}: {msg}")
    where = f"{path}:{first_line}" if first_line else str(path)
    return f"{where}: configuration file: " + "; ".join(parts)


def _file_keys(raw: object, loc: list[str | int]) -> list[str | int]:
    """The error location as the file's keys: without the union tags pydantic inserts (``retrievers.0.bm25.params``
    is ``retrievers.0.params`` in the file)."""
    out: list[str | int] = []
    for i, part in enumerate(loc):
        tag = isinstance(raw, dict) and part not in raw and part in (raw.get("kind"), raw.get("type"))
        if tag or isinstance(raw, dict) and part not in raw and i + 1 < len(loc) and loc[i + 1] in raw:
            continue  # a union's tag (a retriever's kind, a backend's type): the next key sits where this one would
        out.append(part)
        raw = (
            raw.get(part)
            if isinstance(raw, dict)
            else raw[part]
            if isinstance(raw, list) and isinstance(part, int) and part < len(raw)
            else None
        )
    return out


def _valid_keys(loc: list[str | int]) -> set[str]:
    """The keys a section at ``loc`` accepts (of any member of a union; empty where ``loc`` is not a section)."""
    models: list[type[BaseModel]] = [PipelineSettings]
    keyed = False  # the previous field is a mapping: this part is one of its keys
    for part in loc:
        if isinstance(part, int) or keyed:
            keyed = False
            continue
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        if not fields:
            return set()
        models, keyed = [], False
        for f in fields:
            found, under_mapping = _models_in(f.annotation)
            models += found
            keyed = keyed or under_mapping
    return set() if keyed else {k for m in models for k in m.model_fields}


def _models_in(annotation: object) -> tuple[list[type[BaseModel]], bool]:
    """The section classes inside an annotation (``X``, ``X | None``, ``list[X | Y]``, ``dict[str, X]``), and
    whether they sit under a mapping's keys."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    models, keyed = [], False
    for arg in typing.get_args(annotation):
        found, under = _models_in(arg)
        models += found
        keyed = keyed or bool(found) and (under or typing.get_origin(annotation) is dict)
    return models, keyed
