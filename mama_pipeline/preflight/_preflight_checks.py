"""The preflight checks of ``mama-pipeline doctor``: endpoints, input files, cross-section settings, disk room.

Each check gives one :class:`Check` (one line). Nothing here writes into the data folder: endpoints get one
request each, sent outside the LLM cache; input files are opened for their first rows only.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel

from mama_pipeline.llm.client import NO_KEY, FreeText, parse_answer, schema_of
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.settings import PipelineSettings

Status = Literal["PASS", "FAIL", "SKIP"]
PROBE_SYSTEM = "You answer an endpoint check of mama-pipeline doctor."
PROBE_USER = (
    "Reply with one JSON object that follows the response schema. Question for the check: is oxytocin a "
    "uterotonic? Keep every text field to a few words."
)


@dataclass(frozen=True)
class Check:
    status: Status
    name: str
    detail: str

    @property
    def line(self) -> str:
        return f"{self.status}  {self.name}: {self.detail}"


def run_checks(s: PipelineSettings, predicted: tuple[int, str] | str, timeout_s: float = 60.0) -> Iterator[Check]:
    """Every check, in the order they print: endpoints, input files, cross-section settings, disk room
    (``predicted``: see :func:`disk_check`)."""
    yield from endpoint_checks(s, timeout_s)
    yield from input_checks(s)
    yield from cross_section_checks(s)
    yield disk_check(s, predicted)


# -- endpoints ----------------------------------------------------------------
def stage_schema(key: str, cfg: StageSettings) -> type[BaseModel]:
    """The response schema a stage's requests carry (its reasoning setting decides the variant)."""
    stage = key.removeprefix("llm.")
    json_field = cfg.reasoning == "json_field"
    if stage in ("classifier", "classifier_reference"):
        from mama_pipeline.mamabench import verdict_model

        return verdict_model(cfg.reasoning)
    if stage == "query_writer":
        from mama_pipeline.queries import answer_model

        return answer_model(json_field)
    if stage in ("judge", "reference_judge", "cross_model_judge"):
        from mama_pipeline.judging import output_model

        return output_model(cfg.reasoning)
    if stage == "rubric_judge":
        from mama_pipeline.calibration import RubricVerdict

        return RubricVerdict
    if stage == "query_rewriter":
        from mama_pipeline.robustness import rewrite_model

        return rewrite_model(json_field)
    if stage == "rewrite_gate":
        from mama_pipeline.robustness import gate_model

        return gate_model(json_field)
    if stage == "answer_grader":
        from mama_pipeline.systems import ShortAnswerGrade

        return ShortAnswerGrade
    if stage.startswith("systems.entries."):  # an answering system's free-text answers (mcq JSON is a subset)
        return FreeText
    raise ValueError(f"no response schema known for LLM stage {key!r}")


def endpoint_checks(s: PipelineSettings, timeout_s: float) -> Iterator[Check]:
    for key, cfg in s.llm_stages():
        if cfg.embedded:
            yield Check("SKIP", key, "embedded: true: the embedded SmolLM2-135M smoke-test model (not probed)")
            continue
        schema = stage_schema(key, cfg)
        for url in cfg.base_urls:
            yield probe_endpoint(key, url, cfg, schema, timeout_s)


def probe_endpoint(key: str, url: str, cfg: StageSettings, schema: type[BaseModel], timeout_s: float) -> Check:
    """One request with the stage's own decoding and response schema: answers? the model served? the schema
    kept? the reasoning where the stage expects it? and how long it took."""
    name = f"{key} @ {url}"
    headers = {"Authorization": f"Bearer {os.environ.get(cfg.api_key_env) or NO_KEY}"}
    body: dict = {
        **cfg.extra_body,
        "model": cfg.model,
        "messages": [{"role": "system", "content": PROBE_SYSTEM}, {"role": "user", "content": PROBE_USER}],
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
    }
    if cfg.top_p is not None:
        body["top_p"] = cfg.top_p
    if cfg.seed is not None:
        body["seed"] = cfg.seed
    if schema is not FreeText:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema_of(schema), "strict": True},
        }
    try:
        with httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s) as http:
            served = _served_models(http)
            if served is not None and cfg.model not in served:
                return Check("FAIL", name, f"serves {', '.join(served) or 'no model'}, not {cfg.model!r}")
            t0 = time.perf_counter()
            resp = http.post("/chat/completions", json=body)
            latency = time.perf_counter() - t0
    except httpx.HTTPStatusError as exc:
        return Check("FAIL", name, f"HTTP {exc.response.status_code} to GET /models: {exc.response.text[:200]!r}")
    except httpx.HTTPError as exc:
        return Check("FAIL", name, f"down: {type(exc).__name__}: {str(exc)[:200] or 'no answer'}")
    if resp.status_code != 200:
        return Check("FAIL", name, f"HTTP {resp.status_code} to a chat request: {resp.text[:200]!r}")
    try:
        answer = resp.json()
        message = answer["choices"][0]["message"]
        text, finish = message.get("content") or "", answer["choices"][0].get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError):
        return Check("FAIL", name, f"not a chat completion: {resp.text[:200]!r}")
    if answer.get("model") not in (None, cfg.model):
        return Check("FAIL", name, f"answered as model {answer.get('model')!r}, not {cfg.model!r}")
    try:
        value = parse_answer(text, schema, finish)
    except ValueError as exc:
        reason = str(exc) if len(str(exc)) <= 200 else str(exc)[:200] + "..."
        return Check("FAIL", name, f"answer breaks the {schema.__name__} schema (constrained decoding off?): {reason}")
    if cfg.reasoning == "server" and schema is not FreeText:
        if not any(isinstance(message.get(k), str) and message[k].strip() for k in ("reasoning_content", "reasoning")):
            return Check(
                "FAIL",
                name,
                "reasoning: server, but no reasoning_content beside the answer (start the server with its "
                "reasoning parser, or set reasoning: json_field)",
            )
        reasoning = "reasoning_content beside it"
    elif "reasoning" in schema.model_fields:
        if not str(value.get("reasoning") or "").strip():
            return Check("FAIL", name, "reasoning: json_field, but the answer's reasoning field is empty")
        reasoning = "its reasoning field filled"
    else:
        reasoning = "no reasoning asked by this schema"
    return Check("PASS", name, f"{cfg.model} answers in the {schema.__name__} schema, {reasoning}, {latency:.2f} s")


def _served_models(http: httpx.Client) -> list[str] | None:
    """The model ids ``GET /models`` lists (None: the server has no such route)."""
    resp = http.get("/models")
    if resp.status_code == 404:
        return None
    resp.raise_for_status()
    return [m.get("id") for m in resp.json().get("data", []) if isinstance(m, dict)]


# -- input files ---------------------------------------------------------------
def input_checks(s: PipelineSettings) -> Iterator[Check]:
    yield bundle_check(s)
    yield from pool_checks(s)
    yield file_check("calibration.meta_eval", s.calibration.meta_eval.path, s, _first_json_line)
    for r in s.retrieval.retrievers:
        if path := r.input_path():
            yield file_check(f"retrieval.retrievers {r.name}", path, s, None)
    for run in s.evaluation.run_files:
        yield file_check(f"evaluation.run_files {run.name}", run.path, s, None)


def file_check(name: str, path: str | None, s: PipelineSettings, parse: Callable[[Path], str] | None) -> Check:
    if path is None:
        return Check("SKIP", name, "a hub location (fetched by its asset, not by doctor)")
    local = s.resolve(path).resolve()
    if not local.exists():
        return Check("FAIL", name, f"{local} does not exist")
    if parse is None:
        return Check("PASS", name, f"{local} exists")
    try:
        return Check("PASS", name, f"{local}: {parse(local)}")
    except (OSError, ValueError) as exc:
        return Check("FAIL", name, f"{local}: {str(exc)[:200]}")


def bundle_check(s: PipelineSettings) -> Check:
    spec = s.corpus.bundle
    if spec.startswith("hf://"):
        from mama_pipeline.corpus import parse_hub_spec

        try:
            parse_hub_spec(spec)
        except ValueError as exc:
            return Check("FAIL", "corpus.bundle", str(exc))
        return Check("SKIP", "corpus.bundle", f"{spec}: a hub location (fetched by corpus_chunks, not by doctor)")
    return file_check("corpus.bundle", spec, s, _bundle_header)


def _bundle_header(path: Path) -> str:
    """The first header line of a text bundle (JSONL and parquet bundles: their first record's fields)."""
    from mama_pipeline.corpus import HEADER_FORM, HEADER_RE

    if path.suffix == ".parquet":
        import polars as pl

        return f"parquet bundle, columns {', '.join(pl.read_parquet_schema(path))}"
    if path.suffix == ".jsonl":
        return f"JSONL bundle, first record's fields {', '.join(json.loads(_first_line(path)))}"
    line = _first_line(path)
    if not HEADER_RE.match(line):
        raise ValueError(f"first line {line[:80]!r} is not a {HEADER_FORM} header")
    return f"bundle header {line[:80]!r}"


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.decode("utf-8").rstrip("\r\n")
    raise ValueError("empty file")


def _first_json_line(path: Path) -> str:
    return f"first record's fields {', '.join(json.loads(_first_line(path)))}"


def pool_checks(s: PipelineSettings) -> Iterator[Check]:
    """Each upstream pool through its adapter's reader: its files, the required columns, the first rows."""
    from mama_pipeline.mamabench import POOL_BY_NAME, first_records

    for name, pool in POOL_BY_NAME.items():
        loc = getattr(s.mamabench.sources, name)
        key = f"mamabench.sources.{name}"
        if loc.repo_id is not None:
            yield Check("SKIP", key, f"hub dataset {loc.repo_id}@{loc.revision} (fetched by its asset, not by doctor)")
            continue
        try:
            rows = first_records(pool, loc, s.resolve, 3)
        except (OSError, ValueError) as exc:
            yield Check("FAIL", key, str(exc)[:300])
            continue
        yield Check("PASS", key, f"{s.resolve(loc.path or '')}: the first {rows} rows read with the required columns")


# -- settings across sections ----------------------------------------------------
def cross_section_checks(s: PipelineSettings) -> Iterator[Check]:
    from mama_pipeline.multipassage.settings import check_against

    retrievers = {r.name: r.kind for r in s.retrieval.retrievers}
    try:
        check_against(s.multipassage, retrievers, list(s.corpus.tiers))
        yield Check("PASS", "multipassage", f"dense_retriever {s.multipassage.dense_retriever!r}, tiers, pool agree")
    except ValueError as exc:
        yield Check("FAIL", "multipassage", str(exc))
    unknown = sorted(set(s.robustness.retrievers) - set(retrievers))
    if unknown:
        yield Check("FAIL", "robustness.retrievers", f"{unknown} are not in retrieval.retrievers {sorted(retrievers)}")
    else:
        yield Check("PASS", "robustness.retrievers", "every name is a configured retriever")


# -- disk -----------------------------------------------------------------------
def disk_check(
    s: PipelineSettings, predicted: tuple[int, str] | str, free_bytes: Callable[[Path], int] | None = None
) -> Check:
    """Room for the store: the free bytes of the data folder's file system (``free_bytes``, default
    ``shutil.disk_usage``) against ``predicted``, (bytes, how) of the store's size the plan predicts
    (``mama_pipeline.plan._store_size``, given by the command line), or why it is not predicted: then against the
    local input files' bytes, whose content the store copies (a floor)."""
    folder = next(p for p in (s.data_path, *s.data_path.parents) if p.exists())  # nothing is created
    free = (free_bytes or (lambda p: shutil.disk_usage(p).free))(folder)
    if isinstance(predicted, tuple):
        need, what = predicted[0], f"the store's predicted size: {predicted[1]}"
    else:
        sizes = [p.stat().st_size for p in _local_inputs(s) if p.is_file()]
        need = sum(sizes)
        what = (
            f"the {need / 2**20:.1f} MiB of {len(sizes)} local input files the store copies (a floor: the store's "
            f"size is not predicted: {predicted})"
        )
    return Check(
        "PASS" if free >= need else "FAIL", "data_dir room", f"{free / 2**30:.1f} GiB free at {folder}, against {what}"
    )


def _local_inputs(s: PipelineSettings) -> list[Path]:
    paths = [] if s.corpus.bundle.startswith("hf://") else [s.resolve(s.corpus.bundle)]
    for name in type(s.mamabench.sources).model_fields:
        loc = getattr(s.mamabench.sources, name)
        if loc.path is not None:
            base = s.resolve(loc.path)
            paths += [base / f for f in loc.files] if loc.files else [base]
    if s.calibration.meta_eval.path:
        paths.append(s.resolve(s.calibration.meta_eval.path))
    return list(dict.fromkeys(paths))


def summary(checks: list[Check]) -> str:
    count = {k: sum(c.status == k for c in checks) for k in ("PASS", "FAIL", "SKIP")}
    return (
        f"{count['PASS']} passed, {count['FAIL']} failed, {count['SKIP']} not checked (embedded or hub), "
        f"of {len(checks)} checks"
    )
