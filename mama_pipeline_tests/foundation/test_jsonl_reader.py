"""The one JSON-lines reader names the file and line of a bad record."""

import pytest

from mama_pipeline.common.input_errors import InputError
from mama_pipeline.common.jsonl import json_lines


def test_blank_lines_skipped_and_numbers_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n  \n[2]\n', encoding="utf-8")
    assert list(json_lines(path)) == [(1, {"a": 1}), (4, [2])]


def test_bad_line_is_named_with_the_callers_error(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{path}:2: not valid JSON: Expecting value$"):
        list(json_lines(path))

    class Mine(InputError):
        def __init__(self, source, reason, line):
            self.line = line
            super().__init__(reason)

    with pytest.raises(Mine) as err:
        list(json_lines(path, error=Mine))
    assert err.value.line == 2


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match="missing.jsonl"):
        list(json_lines(tmp_path / "missing.jsonl"))
