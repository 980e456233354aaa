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
