"""Reading the physician meta-evaluation file in its upstream format, locally and from the hub layout."""

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from mama_pipeline.calibration._meta_eval import META_EVAL_SCHEMA, locate, read_meta_eval
from mama_pipeline.calibration.settings import META_EVAL_FILE, MetaEvalSource
from mama_pipeline.settings import load_settings
from mama_pipeline_tests.calibration.fixtures import META_EVAL_SAMPLE

NATIVE = [
    "prompt",
    "completion",
    "rubric",
    "category",
    "binary_labels",
    "anonymized_physician_ids",
    "prompt_id",
    "completion_id",
    "canary",
]


def test_fixture_reads_every_field_unchanged():
    df = read_meta_eval(META_EVAL_SAMPLE)
    assert df.schema == pl.Schema(META_EVAL_SCHEMA)
    raw = [json.loads(line) for line in META_EVAL_SAMPLE.read_text().splitlines()]
    assert df.height == len(raw) == 72
    assert df["upstream_line"].to_list() == list(range(1, 73))
    for got, want in zip(df.select(NATIVE).to_dicts(), raw):
        assert got == {k: want[k] for k in NATIVE}


def test_sample_config_points_at_the_fixture():
    s = load_settings()
    found = locate(s.calibration.meta_eval, Path(s.config_dir))
    assert found.path.resolve() == META_EVAL_SAMPLE.resolve()
    assert len(found.sha256) == 64


def write_rows(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = json.loads(META_EVAL_SAMPLE.read_text().splitlines()[0])


@pytest.mark.parametrize(
    "bad, reason",
    [
        ({k: v for k, v in GOOD.items() if k != "rubric"}, r"line 2 .*rubric: Field required"),
        (
            {**GOOD, "binary_labels": [True], "anonymized_physician_ids": ["p1", "p2"]},
            r"line 2 .*1 binary_labels but 2 anonymized_physician_ids",
        ),
        (
            {**GOOD, "binary_labels": ["True", "False"], "anonymized_physician_ids": ["p1", "p2"]},
            r"line 2 .*binary_labels.0",
        ),
        ({**GOOD, "prompt": []}, r"line 2 .*prompt has no messages"),
        ({**GOOD, "new_field": 1}, r"line 2 .*new_field: Extra inputs are not permitted"),
        ("{not json", r":2: not valid JSON"),
    ],
)
def test_bad_rows_name_file_line_and_reason(tmp_path, bad, reason):
    path = write_rows(tmp_path / "meta.jsonl", [GOOD, bad])
    with pytest.raises(ValueError, match=reason) as err:
        read_meta_eval(path)
    assert str(path) in str(err.value)


def test_local_folder_laid_out_like_the_hub_repo(tmp_path):
    shutil.copy(META_EVAL_SAMPLE, tmp_path / META_EVAL_FILE)
    found = locate(MetaEvalSource(path=str(tmp_path)), Path("/nowhere"))
    assert found.path == tmp_path / META_EVAL_FILE
    with pytest.raises(FileNotFoundError, match="does not exist"):
        locate(MetaEvalSource(path="missing.jsonl"), tmp_path)


def test_hub_source_is_read_at_its_pinned_revision(tmp_path, monkeypatch):
    # a hub cache entry as hf_hub_download lays it out; offline it resolves the pinned commit
    commit = "0123456789abcdef0123456789abcdef01234567"
    snap = tmp_path / "hub" / "datasets--openai--healthbench-meta" / "snapshots" / commit
    snap.mkdir(parents=True)
    shutil.copy(META_EVAL_SAMPLE, snap / META_EVAL_FILE)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    source = MetaEvalSource(path=None, repo_id="openai/healthbench-meta", revision=commit)
    found = locate(source, tmp_path)
    assert found.origin == f"hub:openai/healthbench-meta@{commit}/{META_EVAL_FILE}"
    assert read_meta_eval(found.path).height == 72


def test_hub_source_needs_a_pinned_revision():
    with pytest.raises(ValueError, match="revision"):
        MetaEvalSource(path=None, repo_id="openai/healthbench-meta")
    with pytest.raises(ValueError, match="exactly one"):
        MetaEvalSource(path="x.jsonl", repo_id="openai/healthbench-meta", revision="main")
