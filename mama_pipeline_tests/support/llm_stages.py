"""Test configurations name the server of every LLM stage: the fake server's URL, or ``embedded: true``.

A stage with neither is refused when the settings load, so a test configuration that leaves some stages
unused marks them embedded (nothing is started for a stage no step asks). A stage on a server waits
``FAST_BACKOFF`` between transport retries unless the test sets its own backoff: the defaults (0.5 s doubling
to 30 s) would make a test whose fake server answers some requests HTTP 500 every time sleep seconds per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from mama_pipeline.llm.settings import LLMSettings, StageSettings

STAGES = tuple(
    k for k, f in LLMSettings.model_fields.items() if f.annotation is StageSettings and f.default is not None
)


# the waits between transport retries of a stage on a server, where the test sets neither (conftest's make_client)
FAST_BACKOFF = {"backoff_base_s": 0.01, "backoff_max_s": 0.05}


def fast_backoff(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` (a stage's settings, changed in place) with ``FAST_BACKOFF`` unless it sets either backoff."""
    if not FAST_BACKOFF.keys() & cfg.keys():
        cfg.update(FAST_BACKOFF)
    return cfg


def served(url: str, model: str = "fake-model", **settings: Any) -> dict[str, Any]:
    """One stage served by the fake server at ``url`` (``embedded`` off, in case it came from the sample), with
    ``FAST_BACKOFF`` unless ``settings`` set a backoff."""
    return fast_backoff({"base_urls": [url], "model": model, "embedded": False, **settings})


def with_embedded(config: str | dict[str, Any]) -> Any:
    """The configuration (YAML text or a raw dict, changed in place) with every LLM stage and answering system
    that names no base_urls marked embedded, and ``embedded`` dropped where base_urls were set over the sample's
    (and ``FAST_BACKOFF`` set where they set no backoff)."""
    raw = yaml.safe_load(config) if isinstance(config, str) else config
    raw["llm"] = llm = raw.get("llm") or {}
    systems = (raw.get("systems") or {}).get("entries") or []
    for stage in STAGES:
        llm[stage] = llm.get(stage) or {}
    for cfg in [llm[stage] for stage in STAGES] + systems:
        if cfg.get("base_urls"):
            cfg.pop("embedded", None)
            fast_backoff(cfg)
        else:
            cfg.setdefault("embedded", True)
    return yaml.safe_dump(raw, sort_keys=False) if isinstance(config, str) else raw


def served_without_bm25(raw: dict[str, Any], url: str, model_of: Callable[[str], str] = lambda _: "fake-model") -> None:
    """``raw`` (a configuration as read, changed in place) with every LLM stage and answering system on the fake
    server at ``url`` (``model_of(stage)`` names each stage's model; a system's stage is ``system:<name>``) and
    BM25 left out, its RAG systems on minilm: the fake query writer's questions share no words with the corpus."""
    for stage in STAGES:
        raw["llm"].setdefault(stage, {}).update(served(url, model=model_of(stage)))
    for system in raw["systems"]["entries"]:
        system.update(served(url, model=model_of(f"system:{system['name']}")))
        if system.get("retriever") == "bm25":
            system["retriever"] = "minilm"
    raw["retrieval"]["retrievers"] = [r for r in raw["retrieval"]["retrievers"] if r["kind"] != "bm25"]
    for beir in raw["evaluation"]["beir"]:
        beir["retrievers"] = [r for r in beir["retrievers"] if r != "bm25"]
