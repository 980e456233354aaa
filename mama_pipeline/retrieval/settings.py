"""Configuration of the retriever registry and of pooling.

Each retriever is one entry of ``retrieval.retrievers`` with a ``kind`` and that
kind's typed ``params`` (the kind's module in ``retrieval/_kinds/`` defines them);
a wrong or unknown key fails at load time with its path. A retriever's ranking
depth defaults to the deepest pool that uses it.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field, computed_field, model_validator

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._retriever_kinds import kinds
from mama_pipeline.retrieval._retriever_params import RetrieverSettings


def retriever_union():
    """Every kind's settings class, told apart by ``kind``."""
    return Annotated[Union[tuple(k.settings for k in kinds().values())], Field(discriminator="kind")]  # noqa: UP007


RetrieverUnion = retriever_union()


def kinds_that(capability: str) -> tuple[str, ...]:
    """The kinds with ``capability`` (a :class:`RetrieverKind` flag), for the settings of areas that may not
    import retrieval's other modules."""
    return tuple(name for name, kind in kinds().items() if getattr(kind, capability))


class AuditPoolSettings(Section):
    """The wider pool judged on a tier-stratified query sample for the completeness audit."""

    n_queries: int = Field(10, ge=1)  # the paper audited 100
    seed: int = 0
    depth: int = Field(30, ge=1)
    retrievers: list[str] = Field(default_factory=list)  # empty: every retriever


class RetrievalSettings(Section):
    retrievers: list[RetrieverUnion] = Field(default_factory=list)
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
            r.check_runs(by_name)
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

    # the effective lists, in the settings' dump: an asset that reads one declares it (``retrieval.pooled``), so its
    # code version moves with the list, not with how it is written (empty, or every retriever named)
    @computed_field
    @property
    def pooled(self) -> list[str]:
        """The pooled retrievers: ``pool_retrievers``, or every retriever when it is empty."""
        return self.pool_retrievers or self.retriever_names

    @computed_field
    @property
    def audited(self) -> list[str]:
        """The audited retrievers: ``audit.retrievers``, or every retriever when it is empty."""
        return self.audit.retrievers or self.retriever_names

    def required_depth(self, name: str) -> int:
        """The deepest rank any pool (or fused run) reads from this retriever."""
        depths = [self.pool_depth if name in self.pooled else 0, self.audit.depth if name in self.audited else 0]
        depths += [r.depth_read(name) for r in self.retrievers]
        return max(depths) or self.pool_depth

    def depth_of(self, name: str) -> int:
        """Ranks stored for this retriever."""
        return self.retriever(name).top_k or self.required_depth(name)


def rebuild_retriever_union() -> None:
    """Take a kind added after this module loaded into ``retrieval.retrievers`` (the root settings rebuild
    themselves after it: ``kind_registration.register_retriever_kind``)."""
    global RetrieverUnion
    RetrieverUnion = retriever_union()
    RetrievalSettings.model_fields["retrievers"].annotation = list[RetrieverUnion]
    RetrievalSettings.model_rebuild(force=True)
