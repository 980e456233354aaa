"""The MCQ scorability rule and the cosmetic defects that are kept but counted.

An item is refused only when a letter-based scorer cannot represent it: no
usable stem or options, an answer outside the options, more than one correct
option, or the correct option's text repeated under another letter. Cosmetic
defects never change an item; they are listed so the manifest can count them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LETTER_PREFIX = re.compile(r"^\s*\(?[A-Ea-e]\s*[).:]\s+")
TYPOGRAPHY = re.compile("[\u00a0\u2000-\u206f]")  # no-break space and the General Punctuation block
PLACEHOLDERS = {"n/a", "na", "-", "."}


@dataclass
class McqVerdict:
    """The outcome for one MCQ row: a refusal reason, or the choices to keep."""

    reason: str | None
    detail: str = ""
    choices: list[str] = field(default_factory=list)
    answer_index: int | None = None
    defects: list[str] = field(default_factory=list)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def check_mcq(stem: str | None, options: list[str | None] | None, correct: list[int], terse_words: int) -> McqVerdict:
    """Apply the scorability rule.

    ``options`` in letter order (``None`` when the row's options could not be
    parsed); ``correct`` the 0-based indices the row marks correct.
    """
    stem = (stem or "").strip()
    if not stem:
        return McqVerdict("empty_question")
    if options is None:
        return McqVerdict("unparseable_options", "options could not be parsed")
    texts = [(o or "").strip() for o in options]
    while texts and not texts[-1]:
        texts.pop()  # trailing empty slots (e.g. option5 of a 4-option row) are not options
    trimmed = len(texts) < len(options)
    if len(texts) < 2:
        return McqVerdict("unparseable_options", f"{len(texts)} non-empty option(s)")
    if not all(texts):
        return McqVerdict("unparseable_options", f"empty option at letter {_letter(texts.index(''))}")
    if not correct or any(not 0 <= i < len(texts) for i in correct):
        return McqVerdict("answer_outside_options", f"correct {correct} with {len(texts)} options")
    if len(set(correct)) > 1:
        return McqVerdict("multiple_correct", ",".join(_letter(i) for i in sorted(set(correct))))
    answer = correct[0]
    key = _norm(texts[answer])
    twins = [i for i, t in enumerate(texts) if i != answer and _norm(t) == key]
    if twins:
        return McqVerdict("duplicated_correct_text", f"{_letter(answer)} repeated at {','.join(map(_letter, twins))}")
    return McqVerdict(
        None, choices=texts, answer_index=answer, defects=cosmetic_defects(stem, texts, terse_words, trimmed)
    )


def cosmetic_defects(stem: str, choices: list[str], terse_words: int, trimmed: bool = False) -> list[str]:
    """Defects that do not affect letter scoring, in a fixed order."""
    found = []
    if any(LETTER_PREFIX.match(c) for c in choices):
        found.append("embedded_letter_prefix")
    if TYPOGRAPHY.search(stem) or any(TYPOGRAPHY.search(c) for c in choices):
        found.append("non_ascii_typography")
    if len(stem.split()) < terse_words:
        found.append("terse_stem")
    normalised = [_norm(c) for c in choices]
    if len(set(normalised)) < len(normalised):
        found.append("duplicated_distractor")
    if any(n in PLACEHOLDERS for n in normalised):
        found.append("placeholder_option")
    if trimmed:
        found.append("trailing_empty_options")
    return found


def _letter(i: int) -> str:
    return chr(ord("A") + i) if 0 <= i < 26 else str(i)
