"""What every retriever kind shares: its descriptor (:class:`RetrieverKind`); its settings': a retriever's name and depth, a local model's source, an endpoint.

A kind's settings class (in ``retrieval/_kinds/``) subclasses :class:`RetrieverSettings` and answers the
questions other areas ask of any retriever: the model it runs (for the circularity flags), the stored runs it
reads, how deep it reads them. Light: pydantic only, so every settings module may import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"  # usable as a Dagster partition key and a file name
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")


class EncoderModel(Section):
    """A model folder, or a hub id pinned to a commit; neither: the kind's offline default from its wheel."""

    model_path: str | None = None
    model_id: str | None = None
    revision: str | None = None  # 40-hex commit of model_id

    @model_validator(mode="after")
    def _one_source(self):
        if self.model_path and self.model_id:
            raise ValueError("give model_path or model_id, not both")
        if self.model_id and not (self.revision and COMMIT_PATTERN.match(self.revision)):
            raise ValueError(f"model_id {self.model_id!r} needs revision: a 40-hex commit hash")
        if self.revision and not self.model_id:
            raise ValueError("revision is only meaningful with model_id")
        return self

    def named_model(self, default: str | None) -> str | None:
        """The model as the configuration names it (hub id or folder), else ``default``."""
        return self.model_id or self.model_path or default


class EndpointParams(Section):
    """An OpenAI-compatible HTTP endpoint: key from an environment variable, retries with backoff."""

    base_url: str
    model: str
    api_key_env: str = "MAMA_EMBEDDINGS_API_KEY"
    concurrency: int = Field(4, ge=1)
    max_retries: int = Field(4, ge=0)
    timeout_s: float = Field(60.0, gt=0)
    backoff_base_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"base URL {v!r} must start with http:// or https://")
        return v


class RetrieverSettings(Section):
    """One entry of ``retrieval.retrievers``; a kind's subclass adds ``kind`` (its name) and its typed ``params``."""

    name: str = Field(pattern=NAME_PATTERN)
    top_k: int | None = Field(None, ge=1)  # None: the deepest pool depth asked of this retriever

    def model_id(self) -> str | None:
        """The model this retriever runs, as the circularity flags compare it with the judge's; None: none."""
        return None

    def input_path(self) -> str | None:
        """The local file or folder this retriever reads (a run file, a model folder), as the configuration
        writes it: ``mama-pipeline doctor`` checks it exists. None: none."""
        return None

    def runs_read(self) -> list[str]:
        """The retrievers whose stored rankings this one reads (a fusion's runs, a reranker's base run)."""
        return []

    def runs_fused(self) -> list[str]:
        """The runs whose circularity flags this retriever carries (a fusion carries its runs')."""
        return []

    def depth_read(self, run: str) -> int:
        """How deep this retriever reads the stored ranking of ``run`` (0: it does not)."""
        return 0

    def check_runs(self, by_name: dict[str, RetrieverSettings]) -> None:
        """Refuse in one line a run this retriever reads that the configuration cannot give it."""


@dataclass(frozen=True)
class RetrieverKind:
    """One retriever kind: its settings, its capabilities and its searcher."""

    settings: type[RetrieverSettings]
    # (spec, chunks, queries, depth, corpus_version, env) -> registry.Searcher, chunks and queries sorted by id
    searcher: Callable[..., Any]
    # (params, resolve) -> an embedding_cache.Encoder of the documents and queries; None: the kind embeds nothing
    encoder: Callable[..., Any] | None = None
    ranks_free_text: bool = True  # ranks any query text (False: a run file made for given queries)
    reads_runs: bool = False  # ranks from other retrievers' stored rankings (fusion, reranking)
    dense_vectors: bool = False  # its encoder gives dense document vectors (nearest-neighbour chunks)
    tokenizer: bool = False  # its encoder's model has a tokenizer to count document tokens with

    @property
    def name(self) -> str:
        return self.settings.model_fields["kind"].annotation.__args__[0]

    @property
    def answers_free_text(self) -> bool:
        """Ranks any text on its own: a RAG system can retrieve with it."""
        return self.ranks_free_text and not self.reads_runs
