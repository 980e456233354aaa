"""Prompt templates, versioned by the hash of their text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PromptTemplate:
    """A system message and a user template; ``hash`` changes whenever either does."""

    id: str
    system: str
    user: str
    hash: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256("\x1f".join([self.id, self.system, self.user]).encode()).hexdigest()
        object.__setattr__(self, "hash", digest[:16])

    def render(self, **fields: object) -> list[dict[str, str]]:
        """Chat messages with ``fields`` substituted into the user template."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**fields)},
        ]

    @property
    def text(self) -> str:
        """The full template as shipped in release audit folders."""
        return f"### system\n{self.system}\n### user\n{self.user}\n"
