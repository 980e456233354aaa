"""``verify_release`` and ``mama-pipeline verify`` catch corrupted, missing and miscounted files."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest

from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline.release._verify import VerifyError, verify_release
from mama_pipeline.release.cli import main
from mama_pipeline_tests.release import fixtures as fx


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "mamaretrieval" / "0.3.0"
    write_mamaretrieval_release(folder, fx.inputs())
    return folder


def test_a_fresh_release_verifies(release, capsys):
    result = verify_release(release)
    assert result.ok and result.problems == [] and result.unlisted == []
    assert len(result.checked) == 13 and result.manifest == "manifest.json"
    assert main([str(release)]) == 0
    assert "OK" in capsys.readouterr().out


def test_one_flipped_byte_is_detected(release, capsys):
    path = release / "data" / "judgments.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    result = verify_release(release)
    assert not result.ok
    assert len(result.problems) == 1 and result.problems[0].startswith("data/judgments.parquet: sha256")
    assert main([str(release)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "data/judgments.parquet" in out and "12/13 files match" in out


def test_edited_text_missing_file_and_wrong_row_count_are_detected(release):
    (release / "audit" / "judge_relevance_prompt.txt").write_text("edited prompt")
    (release / "data" / "queries.parquet").unlink()
    manifest = json.loads((release / "manifest.json").read_text())
    path = release / "data" / "rankings.parquet"
    pl.read_parquet(path).head(5).write_parquet(path)  # fewer rows, manifest hash updated to match
    manifest["files"]["data/rankings.parquet"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest["files"]["data/rankings.parquet"]["bytes"] = path.stat().st_size
    (release / "manifest.json").write_text(json.dumps(manifest))
    problems = verify_release(release).problems
    assert problems == [
        "audit/judge_relevance_prompt.txt: sha256 "
        f"{hashlib.sha256(b'edited prompt').hexdigest()} does not match the manifest's "
        f"{manifest['files']['audit/judge_relevance_prompt.txt']['sha256']}",
        "data/queries.parquet: missing",
        "data/rankings.parquet: 5 rows, the manifest says 12",
    ]


def test_extra_files_are_reported_not_failed(release):
    (release / "notes.txt").write_text("added later")
    result = verify_release(release)
    assert result.ok and result.unlisted == ["notes.txt"]


def test_mamabench_style_manifest_is_understood(tmp_path):
    folder = tmp_path / "mamabench"
    (folder / "data" / "mcq").mkdir(parents=True)
    (folder / "manifests").mkdir()
    data = b'{"id": 1}\n{"id": 2}\n'
    (folder / "data" / "mcq" / "test.jsonl").write_bytes(data)
    (folder / "manifests" / "manifest.json").write_text(
        json.dumps({"files": {"data/mcq/test.jsonl": hashlib.sha256(data).hexdigest()}})
    )
    assert verify_release(folder).ok
    (folder / "data" / "mcq" / "test.jsonl").write_bytes(data + b'{"id": 3}\n')
    assert verify_release(folder).problems[0].startswith("data/mcq/test.jsonl: sha256")


def test_folder_without_manifest(tmp_path, capsys):
    with pytest.raises(VerifyError, match="no manifest"):
        verify_release(tmp_path)
    assert main([str(tmp_path)]) == 2
    assert "no manifest" in capsys.readouterr().err
