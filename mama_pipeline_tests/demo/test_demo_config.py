"""The demo configuration: loads, points at the demo-sized cuts, and keeps its LLM work to about a hundred requests."""

import csv
import importlib.util
import json
from pathlib import Path

from mama_pipeline.settings import load_settings

PKG = Path(__file__).resolve().parents[2] / "mama_pipeline"
DEMO = PKG / "demo_config.yaml"


def test_demo_config_points_at_small_cuts_that_exist():
    s = load_settings(DEMO)
    src = s.mamabench.sources
    medqa = s.resolve(src.medqa_usmle.path).read_text().splitlines()
    with open(s.resolve(src.kenya_vignettes.path), newline="") as f:
        kenya = list(csv.reader(f))[1:]
    oss = s.resolve(src.healthbench_oss_eval.path).read_text().splitlines()
    hard = s.resolve(src.healthbench_hard.path).read_text().splitlines()
    assert (len(medqa), len(kenya), len(oss), len(hard)) == (3, 2, 5, 3)  # classifier requests: 12 (the sample: 250)
    meta = [json.loads(line) for line in s.resolve(s.calibration.meta_eval.path).read_text().splitlines()]
    assert {m["prompt_id"] for m in meta} <= {json.loads(line)["prompt_id"] for line in oss} and len(meta) > 4
    assert sum(t.quota * len(t.sources) for t in s.corpus.tiers.values()) == 5
    assert s.calibration.harness_sample_size <= 2 and s.mamabench.agreement_sample_size <= 2
    assert s.judging.pilot_size <= 2 and s.retrieval.pool_depth == 1 and s.llm.embedded_server.threads == "auto"
    assert s.llm.embedded_server.n_parallel == 1  # one slot: each request re-reads only what differs from the last


def test_the_cuts_are_what_the_script_makes(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_demo_sample", PKG / "sample_data/demo/make_demo_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    for made in tmp_path.iterdir():
        assert made.read_bytes() == (PKG / "sample_data/demo" / made.name).read_bytes(), made.name
