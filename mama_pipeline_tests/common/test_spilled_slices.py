"""Slices kept in scratch files: read back group by group in the order they came, the folder removed after."""

import polars as pl
import pytest

from mama_pipeline.common.spilled_slices import SpilledSlices

EMPTY = pl.DataFrame(schema={"x": pl.Int64, "name": pl.String})


def frame(*xs: int) -> pl.DataFrame:
    return pl.DataFrame({"x": list(xs), "name": [f"n{x}" for x in xs]})


def test_frames_come_back_by_group_then_in_order_and_the_folder_goes(tmp_path):
    spill = SpilledSlices(tmp_path / "scratch", EMPTY)
    for xs, group in [((1, 2), "b"), ((3,), "a"), ((4, 5), "b"), ((6,), "a")]:
        spill.add(frame(*xs), group)
    assert spill.folder.is_dir() and len(list(spill.folder.iterdir())) == 4
    read = list(spill.read(["a", "b"]))
    assert [f["x"].to_list() for f in read] == [[3], [6], [1, 2], [4, 5]]
    assert read[2].equals(frame(1, 2))  # values and dtypes survive the file
    assert not spill.folder.exists() and (tmp_path / "scratch").is_dir()


def test_no_frame_reads_as_the_empty_one_and_a_discard_removes_the_files(tmp_path):
    spill = SpilledSlices(tmp_path, EMPTY)
    assert [f.schema for f in spill.read()] == [EMPTY.schema]
    other = SpilledSlices(tmp_path, EMPTY)
    other.add(frame(1))
    other.discard()
    assert not other.folder.exists()


def test_a_reader_left_unfinished_still_removes_the_files(tmp_path):
    spill = SpilledSlices(tmp_path, EMPTY)
    spill.add(frame(1))
    spill.add(frame(2))
    reader = spill.read()
    assert next(reader)["x"].to_list() == [1]
    reader.close()
    assert not spill.folder.exists()
    with pytest.raises(StopIteration):
        next(reader)


def test_a_failing_block_that_fills_them_removes_the_files_and_a_finished_one_keeps_them(tmp_path):
    with pytest.raises(RuntimeError, match="search failed"):
        with SpilledSlices(tmp_path, EMPTY) as failed:
            failed.add(frame(1))
            raise RuntimeError("search failed")
    assert not failed.folder.exists()
    with SpilledSlices(tmp_path, EMPTY) as kept:
        kept.add(frame(2))
    assert [f["x"].to_list() for f in kept.read()] == [[2]]
