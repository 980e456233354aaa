"""Configuration of graded relevance judging and its audits."""

from typing import Literal

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section


class JudgingSettings(Section):
    shards: int = Field(4, ge=1)  # query shards = partitions of the judged_labels asset
    batch_pairs: int = Field(16384, ge=1)  # pairs per client run; labels are committed after each
    # (answers reach the client's answer log every half second regardless: a kill re-asks what was in flight
    # and at most the last half second or so of answers)
    lenient_cut: int = Field(3, ge=1, le=6)
    strict_cut: int = Field(5, ge=1, le=6)
    pilot_size: int = Field(60, ge=1)  # pairs the reference judge labels
    pilot_seed: int = 20250715
    # which pooled pairs are judged: full = every one (the paper's protocol); adaptive = the order an adjudication
    # method chooses (judging/README.md, "Adaptive judging") until the budget or the stopping rule, then a uniform
    # sample of the rest that estimates what it holds
    strategy: Literal["full", "adaptive"] = "full"
    # adaptive: move-to-front, the MM-NS bandit or fusion-prioritised (benchmarks/adaptive_judging.py)
    method: Literal["mtf", "mmns", "fusion"] = "mtf"
    budget: float | None = Field(None, gt=0)  # adaptive: a share of the pool (<= 1) or a count of pairs (> 1)
    remainder_sample: int = Field(1000, ge=0)  # adaptive: unjudged pairs judged at random to estimate the rest
    round_pairs: int = Field(2048, ge=1)  # adaptive: pairs chosen per round, judged concurrently
    stop_yield: float | None = Field(None, ge=0, le=1)  # adaptive: stop after a round with fewer relevant than this
    discount: float = Field(0.9, gt=0, le=1)  # mmns: weight of a run's earlier judgments per later one
    seed: int = 20250716  # adaptive: ties in the order and the remainder sample
    min_judged_share: float = Field(0.9, ge=0, le=1)  # Judged@k below this: precision and recall are flagged

    @model_validator(mode="after")
    def _budget_for_adaptive(self) -> "JudgingSettings":
        if self.strategy == "adaptive" and self.budget is None and self.stop_yield is None:
            raise ValueError(
                "judging.strategy adaptive needs judging.budget (a share or a count) or judging.stop_yield"
            )
        if self.budget is not None and self.budget > 1 and self.budget != int(self.budget):
            raise ValueError(f"judging.budget {self.budget}: a share is at most 1, a count a whole number")
        return self

    def budget_pairs(self, pool: int) -> int:
        """The adaptive budget in pairs for a pool of ``pool`` pairs (the whole pool without a budget)."""
        if self.budget is None:
            return pool
        return min(pool, round(self.budget * pool) if self.budget <= 1 else int(self.budget))
