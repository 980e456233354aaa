"""The MCQ scorability rule: refuse only what letter scoring cannot represent; count cosmetics."""

from __future__ import annotations

import pytest

from mama_pipeline.mamabench._scorability import check_mcq

OPTS = ["Oxytocin", "Misoprostol", "Ergometrine", "Carboprost"]
STEM = "Which drug is first-line for preventing postpartum haemorrhage?"


def test_a_clean_item_is_kept_unchanged() -> None:
    v = check_mcq(STEM, OPTS, [0], terse_words=5)
    assert v.reason is None and v.choices == OPTS and v.answer_index == 0 and v.defects == []


@pytest.mark.parametrize(
    ("stem", "options", "correct", "reason"),
    [
        ("   ", OPTS, [0], "empty_question"),
        (None, OPTS, [0], "empty_question"),
        (STEM, None, [0], "unparseable_options"),
        (STEM, ["Oxytocin", None, None], [0], "unparseable_options"),  # one option left
        (STEM, ["Oxytocin", "", "Ergometrine"], [0], "unparseable_options"),  # hole in the middle
        (STEM, OPTS, [], "answer_outside_options"),
        (STEM, OPTS, [4], "answer_outside_options"),
        (STEM, OPTS, [-1], "answer_outside_options"),  # MedMCQA test split: cop = -1
        (STEM, OPTS, [0, 2], "multiple_correct"),
        (STEM, ["Oxytocin", "Misoprostol", " oxytocin ", "Carboprost"], [0], "duplicated_correct_text"),
    ],
)
def test_refusals(stem, options, correct, reason) -> None:
    assert check_mcq(stem, options, correct, terse_words=5).reason == reason


def test_multiple_correct_is_checked_before_an_unknown_letter_only_when_all_letters_exist() -> None:
    assert check_mcq(STEM, OPTS, [0, 9], terse_words=5).reason == "answer_outside_options"
    assert check_mcq(STEM, OPTS, [1, 1], terse_words=5).reason is None  # the same letter twice is one answer


def test_a_duplicated_distractor_is_cosmetic_not_refused() -> None:
    v = check_mcq(STEM, ["Oxytocin", "Not recalled", "Not recalled", "Carboprost"], [0], terse_words=5)
    assert v.reason is None and v.defects == ["duplicated_distractor"]


def test_cosmetic_defects_are_counted_and_text_is_not_rewritten() -> None:
    options = ["A. Oxytocin", "B) Misoprostol", "Ergometrine\u2019s dose", "n/a", None]
    v = check_mcq("Uterotonic?", options, [0], terse_words=5)
    assert v.reason is None
    assert v.choices == ["A. Oxytocin", "B) Misoprostol", "Ergometrine\u2019s dose", "n/a"]
    assert v.defects == [
        "embedded_letter_prefix",
        "non_ascii_typography",
        "terse_stem",
        "placeholder_option",
        "trailing_empty_options",
    ]


def test_a_stem_that_starts_like_a_letter_is_not_a_prefix() -> None:
    v = check_mcq(STEM, ["A 2-day course", "B12 injection", "Iron", "Folate"], [0], terse_words=5)
    assert "embedded_letter_prefix" not in v.defects
