"""Upstream loaders: fixtures, folders, the hub cache offline, and bad files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from pydantic import ValidationError

from mama_pipeline.mamabench._pools import POOL_BY_NAME, POOLS
from mama_pipeline.mamabench._sources import SourceError, load_pool
from mama_pipeline.mamabench.settings import SourceLocation
from mama_pipeline_tests.mamabench.helpers import PACKAGE, SETTINGS, resolve

EXPECTED_ROWS = {
    "medmcqa": 120,
    "medqa_usmle": 150,
    "afrimedqa_mcq": 10,
    "kenya_vignettes": 60,
    "afrimedqa_saq": 6,
    "whb": 20,
    "healthbench_oss_eval": 40,
    "healthbench_consensus": 11,
    "healthbench_hard": 7,
}
UPSTREAM = PACKAGE / "sample_data" / "upstream"


@pytest.mark.parametrize("pool", [p.name for p in POOLS])
def test_every_pool_loads_from_the_bundled_fixtures_with_its_hash(pool: str) -> None:
    loc = getattr(SETTINGS.sources, pool)
    loaded = load_pool(POOL_BY_NAME[pool], loc, resolve)
    assert loaded.rows.height == EXPECTED_ROWS[pool]
    path = resolve(loc.path)
    assert loaded.rows["sha256"].unique().to_list() == [hashlib.sha256(path.read_bytes()).hexdigest()]
    assert loaded.rows["revision"].null_count() == loaded.rows.height
    assert loaded.rows["upstream_index"].is_unique().all()


def test_records_keep_every_native_field() -> None:
    afrimed = load_pool(POOL_BY_NAME["afrimedqa_mcq"], SETTINGS.sources.afrimedqa_mcq, resolve).rows
    assert len(json.loads(afrimed["record"][0])) == 30
    medmcqa = load_pool(POOL_BY_NAME["medmcqa"], SETTINGS.sources.medmcqa, resolve).rows
    first = json.loads(medmcqa["record"][0])
    assert first["id"] == "de09d388-bd4e-42a9-ac6b-ee2d95f822e2" and "exp" in first
    assert medmcqa["upstream_id"][0] == first["id"]


def test_shared_file_rows_of_another_pool_are_counted_not_loaded() -> None:
    loaded = load_pool(POOL_BY_NAME["afrimedqa_saq"], SETTINGS.sources.afrimedqa_saq, resolve)
    assert loaded.outside_pool == {"question_type=mcq": 1}
    mcq = load_pool(POOL_BY_NAME["afrimedqa_mcq"], SETTINGS.sources.afrimedqa_saq, resolve)
    assert mcq.rows.height == 1 and mcq.outside_pool == {"question_type=saq": 6}


def test_csv_with_a_renamed_column_names_the_file_and_the_column(tmp_path: Path) -> None:
    src = (UPSTREAM / "afrimedqa" / "afrimedqa_v2_sample_10.csv").read_text()
    bad = tmp_path / "afrimed.csv"
    bad.write_text(src.replace("correct_answer", "correct_option", 1))
    with pytest.raises(SourceError) as err:
        load_pool(POOL_BY_NAME["afrimedqa_mcq"], SourceLocation(path=str(bad)), resolve)
    assert str(bad) in str(err.value) and "'correct_answer'" in str(err.value)


def test_parquet_with_a_missing_column_names_the_file_and_the_column(tmp_path: Path) -> None:
    bad = tmp_path / "medmcqa.parquet"
    pl.read_parquet(UPSTREAM / "medmcqa" / "validation-sample-120.parquet").drop("cop").write_parquet(bad)
    with pytest.raises(SourceError, match=r"medmcqa\.parquet: missing column\(s\) 'cop'"):
        load_pool(POOL_BY_NAME["medmcqa"], SourceLocation(path=str(bad)), resolve)


def test_jsonl_record_without_a_key_names_the_file_line_and_key(tmp_path: Path) -> None:
    lines = (UPSTREAM / "medqa_usmle" / "us_4_options_test-sample-150.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    record["answer_letter"] = record.pop("answer_idx")
    lines[2] = json.dumps(record)
    bad = tmp_path / "medqa.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(SourceError, match=r"medqa\.jsonl line 3: missing column\(s\) 'answer_idx'"):
        load_pool(POOL_BY_NAME["medqa_usmle"], SourceLocation(path=str(bad)), resolve)


def test_json_list_and_broken_jsonl_are_reported_with_position(tmp_path: Path) -> None:
    data = json.loads((UPSTREAM / "whb" / "WHB_subset.json").read_text())
    del data[4]["justification"]
    bad = tmp_path / "whb.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SourceError, match=r"whb\.json record 4: missing column\(s\) 'justification'"):
        load_pool(POOL_BY_NAME["whb"], SourceLocation(path=str(bad)), resolve)
    broken = tmp_path / "oss.jsonl"
    broken.write_text(
        (UPSTREAM / "healthbench" / "oss_eval-sample-40.jsonl").read_text().splitlines()[0] + "\n{not json\n"
    )
    with pytest.raises(SourceError, match=r"oss\.jsonl:2: not valid JSON"):
        load_pool(POOL_BY_NAME["healthbench_oss_eval"], SourceLocation(path=str(broken)), resolve)


def test_missing_file_and_folder_layout(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        load_pool(POOL_BY_NAME["whb"], SourceLocation(path=str(tmp_path / "nope.json")), resolve)
    (tmp_path / "data").mkdir()
    shutil.copy(UPSTREAM / "whb" / "WHB_subset.json", tmp_path / "data" / "WHB_subset.json")
    loc = SourceLocation(path=str(tmp_path), files=["data/WHB_subset.json"])
    loaded = load_pool(POOL_BY_NAME["whb"], loc, resolve)
    assert loaded.rows.height == 20 and loaded.rows["origin"][0] == "data/WHB_subset.json"
    with pytest.raises(SourceError, match="missing from folder"):
        load_pool(POOL_BY_NAME["whb"], SourceLocation(path=str(tmp_path), files=["x.json"]), resolve)


def test_kenya_vignettes_read_from_the_upstream_xlsx(tmp_path: Path) -> None:
    """The real upstream file is ``Prompt responses.xlsx``: the same rows as the CSV fixture."""
    import openpyxl

    rows = pl.read_csv(UPSTREAM / "kenya_vignettes" / "vignettes-sample-60.csv", infer_schema=False)
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(rows.columns)
    for row in rows.iter_rows():
        sheet.append(list(row))
    path = tmp_path / "Prompt responses.xlsx"
    book.save(path)
    loaded = load_pool(POOL_BY_NAME["kenya_vignettes"], SourceLocation(path=str(path)), resolve)
    from_csv = load_pool(
        POOL_BY_NAME["kenya_vignettes"],
        SourceLocation(path=str(UPSTREAM / "kenya_vignettes" / "vignettes-sample-60.csv")),
        resolve,
    )
    assert loaded.rows.height == 60
    same = ["upstream_index", "upstream_id", "record"]  # file name and hash differ, the rows do not
    assert loaded.rows.select(same).equals(from_csv.rows.select(same))


def test_source_location_must_be_local_xor_pinned_hub() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        SourceLocation(licence="x")
    with pytest.raises(ValidationError, match="revision"):
        SourceLocation(repo_id="org/name", files=["a.jsonl"])
    with pytest.raises(ValidationError, match="files"):
        SourceLocation(repo_id="org/name", revision="abc")


HUB_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from mama_pipeline.mamabench._pools import POOL_BY_NAME
    from mama_pipeline.mamabench.settings import SourceLocation
    from mama_pipeline.mamabench._sources import load_pool
    out = {}
    for rev in sys.argv[1:]:
        loc = SourceLocation(repo_id="GBaker/MedQA-USMLE-4-options", revision=rev,
                             files=["data/phrases_no_exclude_test.jsonl"])
        raw = load_pool(POOL_BY_NAME["medqa_usmle"], loc, Path)
        out[rev] = [raw.rows.height, raw.rows["revision"].unique().to_list(), raw.rows["origin"][0]]
    print(json.dumps(out))
""")


def test_hub_download_reads_an_offline_hub_cache_at_a_pinned_revision(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf" / "hub" / "datasets--GBaker--MedQA-USMLE-4-options"
    target = repo / "snapshots" / commit / "data" / "phrases_no_exclude_test.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(UPSTREAM / "medqa_usmle" / "us_4_options_test-sample-150.jsonl", target)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", HUB_SCRIPT, "main", commit],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PACKAGE.parent,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for rev in ("main", commit):
        assert out[rev] == [150, [commit], "data/phrases_no_exclude_test.jsonl"]
    missing = subprocess.run(
        [sys.executable, "-c", HUB_SCRIPT, "f" * 40],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PACKAGE.parent,
    )
    assert missing.returncode != 0
    assert "cannot fetch data/phrases_no_exclude_test.jsonl from dataset GBaker/MedQA-USMLE-4-options" in missing.stderr
