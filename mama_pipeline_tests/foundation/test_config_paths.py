"""Configured paths: bundled defaults resolve against the package, paths a user writes against the user's file."""

from __future__ import annotations

from pathlib import Path

import pytest

import mama_pipeline
from mama_pipeline.calibration._meta_eval import locate as locate_meta_eval
from mama_pipeline.corpus._bundle import load_bundle
from mama_pipeline.corpus._location import resolve_bundle
from mama_pipeline.corpus._watch import bundle_fingerprint
from mama_pipeline.mamabench._pools import POOLS
from mama_pipeline.mamabench._sources import SourceError, load_pool
from mama_pipeline.settings import load_settings
from mama_pipeline_tests.support.llm_stages import with_embedded

PACKAGE = Path(mama_pipeline.__file__).resolve().parent
REPO = PACKAGE.parent


def test_a_config_written_elsewhere_gets_the_bundled_defaults(tmp_path):
    config = tmp_path / "elsewhere" / "config.yaml"
    config.parent.mkdir()
    config.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\n"))
    s = load_settings(config)
    for pool in POOLS:
        loc = getattr(s.mamabench.sources, pool.name)
        assert loc.path.startswith("bundled:sample_data/")
        assert s.resolve(loc.path).is_relative_to(PACKAGE)
        assert load_pool(pool, loc, s.resolve).rows.height > 0, pool.name
    bundle = resolve_bundle(s.corpus.bundle, Path(s.config_dir)).path
    assert bundle == PACKAGE / "sample_data" / "corpus" / "chunks_for_rag.txt"
    assert load_bundle(bundle).chunks.height > 0
    assert bundle_fingerprint(s.corpus.bundle, Path(s.config_dir)).startswith("sha256:")
    assert locate_meta_eval(s.calibration.meta_eval, Path(s.config_dir)).path.is_relative_to(PACKAGE)


def test_paths_the_user_writes_resolve_against_the_users_file(tmp_path):
    folder = tmp_path / "project"
    (folder / "up").mkdir(parents=True)
    (folder / "up" / "oss.jsonl").write_bytes(
        (PACKAGE / "sample_data/upstream/healthbench/oss_eval-sample-40.jsonl").read_bytes()
    )
    config = folder / "config.yaml"
    config.write_text(
        with_embedded(
            "corpus:\n  bundle: corpus/chunks_for_rag.txt\n"
            "mamabench:\n  sources:\n    healthbench_oss_eval: {path: up/oss.jsonl}\n"
            "    medmcqa: {path: up/missing.parquet}\n"
            "    whb: {path: 'bundled:sample_data/upstream/whb/WHB_subset.json'}\n"
        )
    )
    s = load_settings(config)
    assert s.resolve(s.corpus.bundle) == folder / "corpus" / "chunks_for_rag.txt"
    assert resolve_bundle(s.corpus.bundle, Path(s.config_dir)).path == folder / "corpus" / "chunks_for_rag.txt"
    oss = load_pool(
        next(p for p in POOLS if p.name == "healthbench_oss_eval"), s.mamabench.sources.healthbench_oss_eval, s.resolve
    )
    assert oss.files[0].path == folder / "up" / "oss.jsonl"
    with pytest.raises(SourceError, match=f"source file {folder / 'up' / 'missing.parquet'} does not exist"):
        load_pool(next(p for p in POOLS if p.name == "medmcqa"), s.mamabench.sources.medmcqa, s.resolve)
    assert s.resolve(s.mamabench.sources.whb.path) == PACKAGE / "sample_data/upstream/whb/WHB_subset.json"
    # pools the file leaves out keep the bundled default
    assert s.resolve(s.mamabench.sources.medqa_usmle.path).is_relative_to(PACKAGE)


def test_the_released_v02_tiers_name_all_nineteen_sources():
    s = load_settings(REPO / "config" / "mamaretrieval-v0.2.yaml")
    tiers = {name: (t.quota, len(t.sources)) for name, t in s.corpus.tiers.items()}
    assert tiers == {
        "very_high": (520, 3),
        "high": (285, 8),
        "moderate_high": (225, 1),
        "moderate": (173, 6),
        "low_moderate": (113, 1),
    }
    assert sum(s.corpus.quota_of().values()) == 5_216
    assert "icm-essential-competencies-for-midwifery-practice" in s.corpus.tiers["moderate"].sources
