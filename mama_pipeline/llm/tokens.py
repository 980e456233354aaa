"""Prompt tokens of chat requests: the model's own tokenizer where a local copy exists, else an estimate.

A stage's tokenizer is looked up (``StageSettings.tokenizer``, default the stage's model id) as a
local folder or in the local Hugging Face cache, never downloaded. With a chat template the
messages are counted as the template lays them out; without one, the text of each message.
Without a tokenizer, tokens are estimated at ``CHARS_PER_TOKEN`` characters a token, and say so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class TokenCounter:
    method: str  # how tokens are counted, as printed beside the count
    exact: bool  # False: an estimate
    _count: Callable[[Sequence[dict[str, str]]], int]

    def count(self, messages: Sequence[dict[str, str]]) -> int:
        return self._count(messages)


def estimate(messages: Sequence[dict[str, str]]) -> int:
    """Characters of the messages' text / CHARS_PER_TOKEN, rounded up."""
    return -(-sum(len(m.get("content") or "") for m in messages) // CHARS_PER_TOKEN)


ESTIMATE = TokenCounter(f"estimate ({CHARS_PER_TOKEN} characters a token; no local tokenizer)", False, estimate)


def _may_be_local(name: str) -> bool:
    """Whether ``name`` can name a local tokenizer: a path that exists, or a hub id with a folder in the local
    Hugging Face cache; without either, transformers (which loads torch: seconds) is not imported only to fail."""
    from huggingface_hub.constants import HF_HUB_CACHE

    return Path(name).exists() or (Path(HF_HUB_CACHE) / f"models--{name.replace('/', '--')}").is_dir()


@functools.lru_cache(maxsize=16)
def _local_tokenizer(name: str) -> Any | None:
    if not _may_be_local(name):
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure to load means no local copy: the estimate says so
        return None


def counter_for(name: str | None) -> TokenCounter:
    """The counter of the tokenizer ``name`` (a local folder or a cached hub id), else the estimate."""
    tok = _local_tokenizer(name) if name else None
    if tok is None:
        return ESTIMATE
    if getattr(tok, "chat_template", None):

        def with_template(messages: Sequence[dict[str, str]]) -> int:
            ids = tok.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
            return len(ids if isinstance(ids, list) else ids["input_ids"])  # a list, or an encoding holding one

        return TokenCounter(f"tokenizer {name} (chat template)", True, with_template)

    def plain(messages: Sequence[dict[str, str]]) -> int:
        return sum(len(tok.encode(m.get("content") or "", add_special_tokens=False)) for m in messages)

    return TokenCounter(f"tokenizer {name} (message text, no chat template)", True, plain)
