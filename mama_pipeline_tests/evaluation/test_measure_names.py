"""One name per measure: the paper's label of every stored measure name, from the measures' own definitions; and
the pages' number rules (one precision per kind of number, no negative zero, plurals)."""

from __future__ import annotations

import pytest

from mama_pipeline.common.html_page import cell, heading, interval, number, plural, signed
from mama_pipeline.evaluation._measure_names import label_of, measure_names, shown
from mama_pipeline.evaluation._scoreboard_measures import beir_plan, mamaretrieval_plan


def test_every_measure_of_a_plan_has_the_papers_label():
    names = measure_names(mamaretrieval_plan([5, 10], 3, 5))
    # written out by hand from the paper's naming: HR / MRR / P / R per relevance cut, nDCG and the weighted pair
    assert names["Success(rel=3)@5"] == "HR@5 lenient"
    assert names["Success(rel=5)@10"] == "HR@10 strict"
    assert names["RR(rel=3)"] == "MRR lenient"
    assert names["P(rel=5)@10"] == "P@10 strict"
    assert names["R(rel=3)@5"] == "R@5 lenient"
    assert names["nDCG@10"] == "nDCG@10" and names["wHR@5"] == "wHR@5" and names["Judged@10"] == "Judged@10"
    assert len(set(names.values())) == len(names)  # one label per measure, none shared
    assert shown("RR(rel=3)", names) == "MRR lenient (RR(rel=3))" and shown("nDCG@10", names) == "nDCG@10"
    assert measure_names(beir_plan([10]))["Success@10"] == "HR@10"  # one unnamed cut: no cut word


def test_a_stored_name_reads_as_its_label_and_an_unknown_ir_name_is_refused():
    names = measure_names(mamaretrieval_plan([5], 3, 5))
    assert label_of("Success(rel=3)@5", names) == "HR@5 lenient"
    assert label_of("HR@5 lenient", names) == "HR@5 lenient"  # already a label
    assert label_of("AllIn@10[pieces]", names) == "AllIn@10[pieces]"  # a track's own measure keeps its name
    with pytest.raises(ValueError, match="Success\\(rel=4\\)@5"):
        label_of("Success(rel=4)@5", names)  # a cut outside the plan: no label to show, never the raw name
    with pytest.raises(ValueError, match="RR@3"):
        label_of("RR@3", names)


def test_one_precision_rule_per_kind_of_number():
    assert number(-0.0001) == "0.000" and number(-0.0) == "0.000" and number(-0.0004999) == "0.000"
    assert number(-0.0006) == "-0.001" and number(0.5) == "0.500" and number(1.0) == "1.000"
    assert number(12) == "12" and number(12.0) == "12" and number(12.5) == "12.50"
    assert signed(0.125) == "+0.125" and signed(-0.00001) == "0.000" and signed(-0.031) == "-0.031"
    assert interval(0.5, 0.25, 0.75) == "0.500 [0.250, 0.750]"
    assert interval(0.5, -0.0001, 1.0, 12) == "0.500 [0.000, 1.000] n=12"
    assert plural(1, "query") == "1 query" and plural(2, "query") == "2 queries" and plural(0, "entry") == "0 entries"
    assert plural(1, "item") == "1 item" and plural(3, "item") == "3 items" and plural(2, "day") == "2 days"
    assert cell(True) == "yes" and cell(False) == "no" and cell(None) == "" and cell(float("nan")) == "n/a"
    assert heading("mean_unanswered_as_0") == "mean unanswered as 0" and heading("len") == "count"


def test_a_refusal_is_a_mark_in_its_cells_and_its_reason_is_written_out_once_per_page():
    import polars as pl

    from mama_pipeline.common.html_page import Refusals, headline_refusals_of, page, table

    refusals = Refusals()
    few = "interval: 4 values, fewer than the 30 a bootstrap interval needs"
    figures = [refusals.figure(0.5, few), refusals.figure(0.25, few, n=4), refusals.figure(1.0, "all equal")]
    assert figures == ["0.500 (no interval¹)", "0.250 (no interval¹) n=4", "1.000 (no interval²)"]
    top = refusals.headline_note()
    both = "interval: 3 values, fewer than the 30 a bootstrap interval needs; randomization: no spread"
    frame = pl.DataFrame({"pair": ["a-b", "a-c", "b-c"], "refused": [few, None, both]})
    body = table(frame, refusals=refusals)
    html = page("t", [body], [("a", figures[0])], headline_note=top)
    # the cell's own n (4 values, 3 values) is left out: one reason, written out once, under the headline
    assert "¹ interval refused for 2 figures: fewer than the 30 values a bootstrap interval needs" in html
    assert "² refused for 1 figure: all equal" in html
    assert html.count("fewer than the 30") == 1  # the table's note names the mark, not the reason again
    assert "<td>no interval¹</td>" in body and "<td></td>" in body
    assert "<td>no interval¹, no randomization p³</td>" in body  # two refusals in one reason: a mark each
    assert "¹ interval refused for 2 cells (reason above)" in body
    assert "³ randomization refused for 1 cell: no spread" in body
    assert headline_refusals_of(html) == {
        "¹": ("interval", "fewer than the 30 values a bootstrap interval needs"),
        "²": ("", "all equal"),
    }
    # one reason whatever the cell's own value, which the cell shows
    equal = [refusals.mark(f"interval: all 40 values equal ({v}); no spread") for v in ("0.2", "1", "0.386853")]
    assert equal == ["⁴", "⁴", "⁴"]
    assert refusals.figure(0.0, both) == "0.000 (no interval¹)"  # a figure's mark: its interval's part only
    assert "⁴ interval refused for 3 cells: all 40 values equal; no spread" in refusals.note()


def test_a_track_reads_as_the_readers_name():
    from mama_pipeline.evaluation._measure_names import track_label

    assert [track_label(t) for t in ("short_answer", "mcq", "multipassage", "main")] == [
        "short answer",
        "multiple choice",
        "multi-passage",
        "main",
    ]
    assert track_label("new_track") == "new track"  # never a raw id
