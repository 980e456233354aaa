"""Label Studio labelling interfaces that mirror the LLM judges' instructions.

The definitions are cut out of the judges' own system prompts (the relevance
rubric in :mod:`mama_pipeline.judging._rubric`, the scope categories in
:mod:`mama_pipeline.mamabench._scope_prompt`), so clinicians read the same text
the models were given: there is one source of truth. The task data carries the
query, the chunk (or the mamabench item) and ids only; no LLM label.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr

from mama_pipeline.judging import DIMENSIONS
from mama_pipeline.judging import SYSTEM as RUBRIC_SYSTEM
from mama_pipeline.mamabench import SYSTEM as SCOPE_SYSTEM
from mama_pipeline.mamabench import Category

D1_CHOICES = ("yes", "no")
GRADE_CHOICES = ("0", "1", "2")
CATEGORIES = tuple(c.value for c in Category)
_DIM_START = ("D1 topic", "D2 meaningful", "D3 actionable", "D4 density")
_RUBRIC_END = "The passage is data."
_ROW = "display:flex;gap:24px;align-items:flex-start"
_DATA = "flex:3;min-width:0"
_RUBRIC = "flex:2;min-width:0;background:#f6f7f9;padding:8px 12px;border-radius:4px"


def rubric_definitions() -> dict[str, list[str]]:
    """Dimension -> the lines of its definition, verbatim from the judge's system prompt."""
    text = RUBRIC_SYSTEM
    starts = [text.index(marker) for marker in _DIM_START] + [text.index(_RUBRIC_END)]
    out = {}
    for dim, a, b in zip(DIMENSIONS, starts, starts[1:]):
        out[dim] = [line.strip() for line in text[a:b].strip().splitlines() if line.strip()]
    return out


def scope_definitions() -> tuple[dict[str, str], list[str]]:
    """(category -> its definition, the decision rules), verbatim from the scope classifier's prompt."""
    text = SCOPE_SYSTEM
    found = dict(re.findall(r"^- ([A-Z_]+): (.*?)(?=\n- [A-Z_]+: |\n\n)", text, flags=re.MULTILINE | re.DOTALL))
    missing = [c for c in CATEGORIES if c not in found]
    if missing:
        raise ValueError(f"scope prompt defines no {missing}")
    paragraphs = [p.strip() for p in text.split("\n\n")]
    rules = [p for p in paragraphs if p.startswith(("Decide by", "If two positive"))]
    return {c: " ".join(found[c].split()) for c in CATEGORIES}, [" ".join(r.split()) for r in rules]


def _header(text: str, size: int = 6) -> str:
    return f'<Header size="{size}" value={quoteattr(text)}/>'


def _choices(name: str, to_name: str, values: tuple[str, ...], required: bool) -> str:
    items = "".join(f"<Choice value={quoteattr(v)}/>" for v in values)
    req = ' required="true"' if required else ""
    return f'<Choices name="{name}" toName="{to_name}" choice="single-radio" showInline="true"{req}>{items}</Choices>'


def relevance_config() -> str:
    """The (query, chunk) interface: query and chunk on the left, D1-D4 with their definitions on the right."""
    defs = rubric_definitions()
    rubric_parts = [_header("Rubric: score = D1 x (D2 + D3 + D4)", 4)]
    for dim in DIMENSIONS:
        lines = defs[dim]
        rubric_parts.append(_header(lines[0], 5))
        rubric_parts += [_header(line) for line in lines[1:]]
        values = D1_CHOICES if dim == "d1_topic" else GRADE_CHOICES
        rubric_parts.append(_choices(dim, "chunk", values, required=dim == "d1_topic"))
    return (
        f'<View><View style="{_ROW}">'
        f'<View style="{_DATA}">'
        f'{_header("Question", 4)}<Text name="query" value="$query"/>'
        f'{_header("Passage", 4)}<Text name="where" value="$where"/><Text name="chunk" value="$chunk"/>'
        f"</View>"
        f'<View style="{_RUBRIC}">{"".join(rubric_parts)}</View>'
        f"</View></View>"
    )


def scope_config() -> str:
    """The mamabench item interface: the item on the left, the scope categories and rules on the right."""
    definitions, rules = scope_definitions()
    parts = [_header("Scope categories", 4)]
    for c in CATEGORIES:
        parts.append(_header(f"{c}: {definitions[c]}"))
    parts += [_header(r) for r in rules]
    parts.append(_choices("category", "item", CATEGORIES, required=True))
    return (
        f'<View><View style="{_ROW}">'
        f'<View style="{_DATA}">{_header("Item", 4)}<Text name="item" value="$item"/></View>'
        f'<View style="{_RUBRIC}">{"".join(parts)}</View>'
        f"</View></View>"
    )
