"""Imported runs: TREC and parquet files validated against corpus and query ids."""

import polars as pl
import pytest

from mama_pipeline.retrieval._imported import RunImportError, read_run

QUERIES = ["q1", "q2"]
CHUNKS = ["c1", "c2", "c3"]


def write(tmp_path, text, name="run.trec"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_valid_trec_run(tmp_path):
    path = write(tmp_path, "q1 Q0 c1 1 3.5 colbert\nq1 Q0 c2 2 1.25 colbert\n\nq2 Q0 c3 1 -0.5 colbert\n")
    hits = read_run(path, None, QUERIES, CHUNKS)
    assert hits.rows() == [("q1", "c1", 3.5), ("q1", "c2", 1.25), ("q2", "c3", -0.5)]


@pytest.mark.parametrize(
    "line, reason",
    [
        ("q9 Q0 c1 1 1.0 t", "unknown query id 'q9'"),
        ("q1 Q0 c9 1 1.0 t", "unknown chunk id 'c9'"),
        ("q1 Q0 c2 1 0.5 t", "rank 1 used twice for query q1 (first at line 1)"),
        ("q1 Q0 c1 2 0.5 t", "chunk c1 listed twice for query q1 (first at line 1)"),
        ("q1 Q0 c2 2 high t", "score 'high' is not a finite number"),
        ("q1 Q0 c2 2 nan t", "score 'nan' is not a finite number"),
        ("q1 Q0 c2 two 1.0 t", "rank 'two' is not a positive integer"),
        ("q1 Q0 c2 2 1.0", "expected 6 fields"),
    ],
)
def test_trec_errors_name_file_line_and_reason(tmp_path, line, reason):
    path = write(tmp_path, "q1 Q0 c1 1 2.0 t\n" + line + "\n")
    with pytest.raises(RunImportError) as err:
        read_run(path, "trec", QUERIES, CHUNKS)
    assert f"{path}:line 2: {reason}" in str(err.value)


def test_one_line_names_the_first_problem_and_counts_the_others_which_are_all_kept(tmp_path):
    path = write(tmp_path, "".join(f"q{i} Q0 c1 1 1.0 t\n" for i in range(3, 33)))  # 30 unknown queries
    with pytest.raises(RunImportError) as err:
        read_run(path, None, QUERIES, CHUNKS)
    assert str(err.value) == f"{path}:line 1: unknown query id 'q3' (and 29 more problems)"
    assert err.value.problems == [f"{path}:line {n}: unknown query id 'q{n + 2}'" for n in range(1, 31)]


def test_a_single_problem_is_the_whole_message(tmp_path):
    path = write(tmp_path, "q1 Q0 c1 1 1.0 t\nq1 Q0 c2 2 1.0\n")
    with pytest.raises(RunImportError) as err:
        read_run(path, None, QUERIES, CHUNKS)
    assert str(err.value) == f"{path}:line 2: expected 6 fields (query_id Q0 chunk_id rank score tag), found 5"
    assert err.value.problems == [str(err.value)]


def test_parquet_run(tmp_path):
    path = tmp_path / "run.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q2"], "chunk_id": ["c2", "c1"], "score": [0.9, 0.1], "rank": [1, 1]}
    ).write_parquet(path)
    assert read_run(path, None, QUERIES, CHUNKS).rows() == [("q1", "c2", 0.9), ("q2", "c1", 0.1)]


def test_parquet_errors_name_the_row(tmp_path):
    path = tmp_path / "run.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "chunk_id": ["c1", "c1", "c7"], "score": ["1.0", "x", "2"]}
    ).write_parquet(path)
    with pytest.raises(RunImportError) as err:
        read_run(path, None, QUERIES, CHUNKS)
    assert str(err.value) == f"{path}:row 2: score 'x' is not a finite number (and 2 more problems)"
    assert err.value.problems == [
        f"{path}:row 2: score 'x' is not a finite number",
        f"{path}:row 2: chunk c1 listed twice for query q1 (first at row 1)",
        f"{path}:row 3: unknown chunk id 'c7'",
    ]


def test_parquet_missing_columns_and_missing_file(tmp_path):
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc": ["c1"]}).write_parquet(path)
    with pytest.raises(RunImportError, match="missing column"):
        read_run(path, None, QUERIES, CHUNKS)
    with pytest.raises(RunImportError, match="does not exist"):
        read_run(tmp_path / "absent.trec", None, QUERIES, CHUNKS)
