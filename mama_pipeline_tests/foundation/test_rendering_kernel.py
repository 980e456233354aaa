"""The one Markdown table builder: the cell rules each caller relies on."""

import polars as pl

from mama_pipeline.common.markdown import METADATA, VERBATIM, Cells, frame_table, table


def test_default_cells_replace_pipes_and_keep_floats_as_written():
    assert table(("a", "b"), [(1.25, "x|y"), (None, "z")]) == "| a | b |\n|---|---|\n| 1.25 | x/y |\n|  | z |"


def test_verbatim_leaves_pipes_and_metadata_rounds_and_joins_lines():
    assert table(("a",), [("x|y",)], VERBATIM).splitlines()[2] == "| x|y |"
    assert table(("a", "b"), [(0.12345, "two\nlines")], METADATA).splitlines()[2] == "| 0.123 | two lines |"


def test_dataset_card_cells_dash_for_none_and_escaped_pipe():
    cells = Cells(none="–", digits=1, pipe="\\|")
    assert table(("a", "b", "c"), [(None, 2.25, "p|q")], cells).splitlines()[2] == "| – | 2.2 | p\\|q |"


def test_cut_applies_after_replacement():
    assert Cells(newline=" ", cut=5).text("ab\ncdefg") == "ab cd"


def test_frame_table_limit_and_empty():
    df = pl.DataFrame({"n": [1, 2, 3]})
    assert frame_table(df, limit=2) == "| n |\n|---|\n| 1 |\n| 2 |\n\n(1 more rows)"
    assert frame_table(df.clear(), empty="(none)") == "(none)"
    assert frame_table(df.clear()) == "| n |\n|---|"


def test_report_numbers_at_a_readers_precision():
    from mama_pipeline.common.html_page import cell, number, p_value

    assert [number(v) for v in (0.53217, -0.0123, 1.0, 12.0, 3.14159, 1234.5, 7, float("nan"), None)] == [
        "0.532",
        "-0.012",
        "1.000",
        "12",
        "3.14",
        "1234.50",
        "7",
        "n/a",
        "",
    ]
    assert [p_value(p) for p in (0.04234, 0.0004, 1.0)] == ["0.042", "&lt; 0.001", "1.000"]
    # one quantity computed two ways reads the same on every page: 3 relevant of 80 top-20 places (the clinician
    # page's judge-only P@20) and the mean of per-query P@20 0.05, 0.1, 0, 0 (the scoreboard's) are both 0.0375
    per_query_mean = sum([0.05, 0.1, 0.0, 0.0]) / 4
    assert per_query_mean != 3 / 80  # the floats differ in the last bit, on either side of the half
    assert number(3 / 80) == number(per_query_mean) == "0.038" and number(0.0625) == "0.063"
    assert (
        cell(0.00001, "p_holm") == "&lt; 0.001"
        and cell(0.00001, "diff") == "0.000"
        and cell(-0.00001, "diff") == "0.000"
    )
    assert cell(["a", "b<"], "ids") == "a, b&lt;" and cell(True, "flag") == "yes" and cell(False, "flag") == "no"


def test_page_headline_round_trip_and_one_stylesheet():
    from mama_pipeline.common.html_page import STYLESHEET, headline_of, page

    html = page("T <1>", ["<p>body</p>"], [("bm25: nDCG@10", "0.532 over 40 queries"), ("a&b", "<none>")])
    assert headline_of(html) == [("bm25: nDCG@10", "0.532 over 40 queries"), ("a&b", "<none>")]
    assert html.count("<style>") == 1 and STYLESHEET in html and "<title>T &lt;1&gt;</title>" in html
    assert headline_of(page("T", [])) == []
