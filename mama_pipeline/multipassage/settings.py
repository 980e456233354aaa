"""Configuration of the multi-passage track."""

from __future__ import annotations

from pydantic import Field, field_validator

from mama_pipeline.common.settings_base import Section
from mama_pipeline.llm.settings import LLMSettings
from mama_pipeline.retrieval.settings import kinds_that

# stages that always exist (an optional stage such as cross_model_judge may be unset, so it cannot write or verify)
STAGES = tuple(k for k, f in LLMSettings.model_fields.items() if k != "embedded_server" and f.default is not None)


class MultipassageSettings(Section):
    # Candidate chunk sets. Section neighbours: runs of consecutive eligible chunks of one source whose
    # breadcrumbs agree on the first ``section_level`` levels. Cross-source sets: an anchor chunk with its
    # nearest chunks from other sources under ``dense_retriever`` (an embedding retriever of retrieval.retrievers:
    # kind dense, a local model, or openai_embeddings, a served one).
    set_sizes: list[int] = Field(default_factory=lambda: [2, 3])
    section_level: int = Field(2, ge=1)
    dense_retriever: str = "minilm"
    neighbours: int = Field(8, ge=1)  # nearest chunks looked at per anchor
    min_similarity: float = Field(0.5, ge=-1.0, le=1.0)  # cosine of a cross-source partner to its anchor
    # Sampling: candidate sets per source of each tier (corpus.tiers names the sources), stratified by kind
    # (section / cross_source), seeded per source from ``seed``. Only the sources of a tier given sets anchor
    # candidate sets (none given: an empty candidates table, nothing embedded).
    sets_per_source: dict[str, int] = Field(default_factory=dict)  # tier name -> sets per source
    seed: int = 20250602
    max_words: int = Field(30, ge=1)  # questions above it are dropped (too_long), never cut
    # LLM stages (names of llm.* sections): the question writer and the verifying judge
    writer_stage: str = "query_writer"
    verifier_stage: str = "judge"
    # Labels: a pool of the configured retrievers' top ``pool_depth`` plus every chunk of each question's set; the
    # judge grades each pair's relevance and says which of the question's facts the chunk states
    pool_depth: int = Field(10, ge=1)
    pool_retrievers: list[str] = Field(default_factory=list)  # empty: every retriever
    # Measures
    cutoffs: list[int] = Field(default_factory=lambda: [3, 5, 10, 20])
    # alpha-nDCG: a chunk stating a fact already seen c times higher in the ranking gains (1 - alpha)^c for it
    alpha: float = Field(0.5, gt=0.0, lt=1.0)
    significance_measures: list[str] = Field(
        default_factory=lambda: ["alpha_nDCG@10", "AllIn@10[pieces]", "R@10[pieces]", "Success(rel=3)@5"]
    )
    headline_measure: str = "AllIn@10[pieces]"
    release: bool = False  # ship the track as the ``multipassage`` configuration of the mamaretrieval release

    @field_validator("set_sizes")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if not v or any(n not in (2, 3) for n in v) or len(set(v)) != len(v):
            raise ValueError(f"set_sizes must be distinct values from {{2, 3}}, got {v}")
        return sorted(v)

    @field_validator("writer_stage", "verifier_stage")
    @classmethod
    def _stage(cls, v: str) -> str:
        if v not in STAGES:
            raise ValueError(f"{v!r} is not an LLM stage; expected one of {list(STAGES)}")
        return v

    @field_validator("cutoffs")
    @classmethod
    def _cutoffs(cls, v: list[int]) -> list[int]:
        if not v or min(v) < 1:
            raise ValueError(f"cutoffs must be positive integers, got {v}")
        return sorted(set(v))


def embedding_kinds() -> tuple[str, ...]:
    """The retriever kinds whose dense document vectors give the neighbours."""
    return kinds_that("dense_vectors")


def check_against(mp: MultipassageSettings, retrievers: dict[str, str], tiers: list[str]) -> None:
    """Names this section shares with others: ``retrievers`` (name -> kind) and the corpus tiers."""
    kind = retrievers.get(mp.dense_retriever)
    if kind not in embedding_kinds():
        found = "is not in retrieval.retrievers" if kind is None else f"is a {kind} retriever"
        raise ValueError(
            f"multipassage.dense_retriever {mp.dense_retriever!r} {found}; it must name an embedding "
            f"retriever (kind {' or '.join(embedding_kinds())})"
        )
    unknown = sorted(set(mp.sets_per_source) - set(tiers))
    if unknown:
        raise ValueError(f"multipassage.sets_per_source names tiers {unknown} that corpus.tiers does not have")
    unknown = sorted(set(mp.pool_retrievers) - set(retrievers))
    if unknown:
        raise ValueError(f"multipassage.pool_retrievers names unknown retrievers {unknown}")
