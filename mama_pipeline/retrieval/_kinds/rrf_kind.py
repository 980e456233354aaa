"""The ``rrf`` kind: reciprocal rank fusion (Cormack et al. 2009) of other retrievers' stored rankings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._retriever_params import RetrieverKind, RetrieverSettings


class RrfParams(Section):
    runs: list[str] = Field(min_length=2)  # retrievers to fuse
    k: int = Field(60, ge=1)  # the RRF constant (Cormack et al. 2009)
    depth: int | None = Field(None, ge=1)  # ranks read from each run; None: all stored


class RrfRetriever(RetrieverSettings):
    kind: Literal["rrf"]
    params: RrfParams

    def runs_read(self) -> list[str]:
        return list(self.params.runs)

    def runs_fused(self) -> list[str]:
        return list(self.params.runs)

    def depth_read(self, run: str) -> int:
        return (self.params.depth or 0) if run in self.params.runs else 0

    def check_runs(self, by_name: dict[str, RetrieverSettings]) -> None:
        for run in self.params.runs:
            if run not in by_name or run == self.name or isinstance(by_name[run], RrfRetriever):
                raise ValueError(
                    f"retriever {self.name!r}: params.runs entry {run!r} must name another, non-rrf retriever"
                )


def searcher(spec, chunks, queries, depth, corpus_version, env):
    """A slice fuses the runs' stored rankings of its queries (a run with none of them adds nothing, as in a
    fusion of every query); a run with no stored rankings at all is refused once every slice is fused."""
    from mama_pipeline.retrieval._fusion import rrf_hits
    from mama_pipeline.retrieval._registry import Searcher, current_rankings

    p = spec.params
    seen: set[str] = set()

    def search(part):
        stored = current_rankings(spec.name, p.runs, chunks, part, corpus_version, env)
        seen.update(stored.get_column("retriever").unique().to_list())
        return rrf_hits(stored, p.runs, p.k, p.depth)

    def finish() -> dict[str, Any]:
        missing = [name for name in p.runs if name not in seen]
        if missing:
            raise ValueError(
                f"reciprocal rank fusion: no stored rankings for {missing}; materialise those partitions first"
            )
        return {"runs": ", ".join(p.runs), "rrf_k": p.k, "run_depth": p.depth or "all"}

    return Searcher(search, finish)


KIND = RetrieverKind(RrfRetriever, searcher, reads_runs=True)
