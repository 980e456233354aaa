"""A stage's budget: the most new requests and new prompt tokens one run may send (unset: unlimited)."""

from __future__ import annotations

from mama_pipeline.llm.settings import StageSettings


class BudgetExceeded(RuntimeError):
    """A run would send more than its stage's budget allows; nothing was sent."""


def budget_breach(
    stage: str, s: StageSettings, new_requests: int, new_prompt_tokens: int, counted_by: str, sent_before: int = 0
) -> str | None:
    """Why ``new_requests`` / ``new_prompt_tokens`` exceed the stage's budget, or None when within it;
    ``sent_before``: of the new requests, those sent already by earlier runs of the same step."""
    over = []
    if s.max_new_requests is not None and new_requests > s.max_new_requests:
        over.append(f"{new_requests} new requests > max_new_requests {s.max_new_requests}")
    if s.max_new_prompt_tokens is not None and new_prompt_tokens > s.max_new_prompt_tokens:
        over.append(
            f"{new_prompt_tokens} new prompt tokens ({counted_by}) > max_new_prompt_tokens {s.max_new_prompt_tokens}"
        )
    if not over:
        return None
    earlier = f" ({sent_before} of them sent by this step's earlier runs)" if sent_before else ""
    return f"stage {stage}: over its budget, stopped before sending: {'; '.join(over)}{earlier}"
