"""One definition of what a measure is (``evaluation/_scoreboard_measures.py``): every stored measure name finds its
family, and 0/1-ness is the family's, never the values'."""

from __future__ import annotations

import re

import pytest

from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan, measure_family, zero_one_measures


def test_the_0_1_measures_among_every_kind_of_stored_name():
    names = [
        "Success(rel=3)@5",
        "Success@10",
        "RR(rel=3)",
        "RR",
        "nDCG@10",
        "P(rel=5)@1",
        "R(rel=3)@10",
        "wHR@5",
        "wP@10",
        "Judged@10",
        "alpha_nDCG@10",
        "alpha_nDCG(alpha=0.3)@5",
        "R@10[pieces]",
        "AllIn@10[pieces]",
    ]
    assert zero_one_measures(names) == {"Success(rel=3)@5", "Success@10", "AllIn@10[pieces]"}


def test_families_carry_their_paper_label_stem_and_provider():
    got = {
        name: (measure_family(name).key, measure_family(name).provider)
        for name in ("Success(rel=3)@5", "RR(rel=3)", "wHR@5", "R@10[pieces]", "AllIn@10[pieces]", "alpha_nDCG@10")
    }
    assert got == {
        "Success(rel=3)@5": ("HR", "ir_measures"),
        "RR(rel=3)": ("MRR", "ir_measures"),
        "wHR@5": ("wHR", "own"),
        "R@10[pieces]": ("R[pieces]", "ir_measures"),
        "AllIn@10[pieces]": ("AllIn[pieces]", "own"),
        "alpha_nDCG@10": ("alpha_nDCG", "ir_measures"),
    }


def test_a_plan_measure_is_binary_exactly_when_its_name_is_0_1():
    measures = mamaretrieval_plan([1, 5], lenient=3, strict=5).measures()
    assert {m.name for m in measures if m.binary} == {
        "Success(rel=3)@1",
        "Success(rel=3)@5",
        "Success(rel=5)@1",
        "Success(rel=5)@5",
    }
    assert zero_one_measures(m.name for m in measures) == {m.name for m in measures if m.binary}


@pytest.mark.parametrize("name", ["MAP@10", "AllIn@10", "Success(rel=3)@5[facts]", "hit rate"])
def test_a_name_of_no_known_family_is_an_error(name):
    with pytest.raises(ValueError, match=rf"measure '{re.escape(name)}' is of no known family; known: \["):
        measure_family(name)
