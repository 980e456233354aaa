"""mamabench at full scale: 25,949 upstream rows through the Dagster group, scope classifier on the fake server.

Synthetic copies of the fixture rows are written in each pool's real upstream format
(parquet, jsonl, json, 30-column CSV), as many per pool as the released v0.2 kept
(18,508 MedMCQA, 4,199 MedQA, ... 258 HealthBench hard). The whole ``mamabench``
group is materialised twice in process: a cold run (every classifier request goes to
the fake server) and a warm run (every answer from the cache). Prints per-step and
total wall time, LLM calls and peak memory (ru_maxrss of this process, which runs
Dagster in process; the generator and the fake server run in their own processes).

Run from the repository root: .venv/bin/python -m benchmarks.mamabench_scale [--delay 0.0] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import dagster as dg
import polars as pl
import yaml

from mama_pipeline.mamabench.definitions import build_defs as build_mamabench_defs
from mama_pipeline.release.assets import mamabench_release
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_mamabench_defs(load_settings())

PACKAGE = Path(__file__).resolve().parents[1] / "mama_pipeline"
UP = PACKAGE / "sample_data" / "upstream"
OWN = PACKAGE / "sample_data" / "mamabench"
SCALE = {  # upstream rows generated per pool (the released v0.2 kept counts; total 25,949)
    "medmcqa": 18_508,
    "medqa_usmle": 4_199,
    "afrimedqa_mcq": 534,
    "kenya_vignettes": 312,
    "afrimedqa_saq": 37,
    "whb": 20,
    "healthbench_oss_eval": 1_209,
    "healthbench_consensus": 872,
    "healthbench_hard": 258,
}


@dg.asset(key="calibration_side_file")
def empty_side_file() -> pl.DataFrame:
    """The calibration area's side-file is out of this benchmark's scope: an empty stand-in."""
    schema = {
        "upstream_line": pl.Int64,
        "prompt": pl.List(pl.Struct({"role": pl.String, "content": pl.String})),
        "completion": pl.String,
        "rubric": pl.String,
        "category": pl.String,
        "binary_labels": pl.List(pl.Boolean),
        "anonymized_physician_ids": pl.List(pl.String),
        "prompt_id": pl.String,
        "completion_id": pl.String,
        "canary": pl.String,
        "scope_category": pl.String,
    }
    return pl.DataFrame(schema=schema)


def _cycle(rows: list, n: int) -> list[tuple[int, dict]]:
    return [(k, rows[k % len(rows)]) for k in range(n)]


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def generate(out: Path) -> dict[str, str]:
    """Write each pool's synthetic upstream file; returns pool -> path."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    med = pl.read_parquet(UP / "medmcqa" / "validation-sample-120.parquet").to_dicts()
    rows = [
        {**r, "id": f"{r['id']}-s{k}", "question": f"{r['question']} (copy {k})"}
        for k, r in _cycle(med, SCALE["medmcqa"])
    ]
    paths["medmcqa"] = out / "medmcqa.parquet"
    pl.DataFrame(rows).write_parquet(paths["medmcqa"])

    medqa = [json.loads(line) for line in (UP / "medqa_usmle" / "us_4_options_test-sample-150.jsonl").open()]
    paths["medqa_usmle"] = out / "medqa.jsonl"
    _jsonl(
        paths["medqa_usmle"],
        [{**r, "question": f"{r['question']} (copy {k})"} for k, r in _cycle(medqa, SCALE["medqa_usmle"])],
    )

    for pool, src in (
        ("afrimedqa_mcq", UP / "afrimedqa" / "afrimedqa_v2_sample_10.csv"),
        ("afrimedqa_saq", OWN / "afrimedqa" / "afrimedqa_v2_saq_sample.csv"),
    ):
        df = pl.read_csv(src, infer_schema=False)
        df = df.filter(pl.col("question_type") == pool.rsplit("_", 1)[1])
        rows = [
            {**r, "sample_id": f"{r['sample_id']}-s{k}", "question": f"{r['question']} (copy {k})"}
            for k, r in _cycle(df.to_dicts(), SCALE[pool])
        ]
        paths[pool] = out / f"{pool}.csv"
        pl.DataFrame(rows, schema=df.schema).write_csv(paths[pool])

    kenya = pl.read_csv(UP / "kenya_vignettes" / "vignettes-sample-60.csv", infer_schema=False).to_dicts()
    rows = [
        {**r, "StudyID": str(100_000 + k), "User Prompt": f"{r['User Prompt']} (copy {k})"}
        for k, r in _cycle(kenya, SCALE["kenya_vignettes"])
    ]
    paths["kenya_vignettes"] = out / "kenya.csv"
    pl.DataFrame(rows).write_csv(paths["kenya_vignettes"])

    paths["whb"] = out / "whb.json"
    paths["whb"].write_text(json.dumps(json.loads((UP / "whb" / "WHB_subset.json").read_text())[: SCALE["whb"]]))

    oss = [json.loads(line) for line in (UP / "healthbench" / "oss_eval-sample-40.jsonl").open()]
    copies = []
    for k, r in _cycle(oss, SCALE["healthbench_oss_eval"]):
        prompt = [dict(m) for m in r["prompt"]]
        prompt[-1]["content"] += f" (copy {k})"
        copies.append({**r, "prompt": prompt, "prompt_id": f"{r['prompt_id']}-s{k}"})
    paths["healthbench_oss_eval"] = out / "oss_eval.jsonl"
    _jsonl(paths["healthbench_oss_eval"], copies)
    paths["healthbench_consensus"] = out / "consensus.jsonl"  # same prompts as oss_eval, cluster criteria only
    _jsonl(
        paths["healthbench_consensus"],
        [
            {**r, "rubrics": [c for c in r["rubrics"] if "level:cluster" in c["tags"]] or r["rubrics"][:1]}
            for r in copies[: SCALE["healthbench_consensus"]]
        ],
    )
    paths["healthbench_hard"] = out / "hard.jsonl"  # a subset of oss_eval prompts, full rubrics
    _jsonl(paths["healthbench_hard"], copies[-SCALE["healthbench_hard"] :])
    return {k: str(v) for k, v in paths.items()}


def materialise(config: Path) -> tuple[float, dict[str, float]]:
    t0 = time.perf_counter()
    result = dg.materialize(
        [empty_side_file, *defs.assets, mamabench_release, *defs.asset_checks],
        resources=shared_resources(str(config)),
        selection=dg.AssetSelection.all(),
        raise_on_error=True,
    )
    wall = time.perf_counter() - t0
    steps = {
        e.step_key: e.event_specific_data.duration_ms / 1000
        for e in result.all_events
        if e.event_type_value == "STEP_SUCCESS"
    }
    assert all(c.passed for c in result.get_asset_check_evaluations())
    return wall, steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.0, help="fake server answer time (s)")
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        tmp_path = Path(tmp)
        t0 = time.perf_counter()
        with ProcessPoolExecutor(1) as pool:  # keeps the generator's memory out of the peak below
            paths = pool.submit(generate, tmp_path / "upstream").result()
        print(f"generated {sum(SCALE.values()):,} upstream rows in {time.perf_counter() - t0:.1f}s")
        stage = {"base_urls": [server.url], "concurrency": args.concurrency}
        config = tmp_path / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                with_embedded(
                    {
                        "data_dir": str(tmp_path / "data"),
                        "llm": {
                            "classifier": {**stage, "model": "fake-classifier"},
                            "classifier_reference": {**stage, "model": "fake-reference"},
                        },
                        "mamabench": {
                            "agreement_sample_size": 0,
                            "sources": {p: {"path": path} for p, path in paths.items()},
                        },
                    }
                )
            )
        )
        for label in ("cold", "warm"):
            server.reset()
            wall, steps = materialise(config)
            calls = server.stats()["chat_calls"]
            print(f"\n{label} run: {wall:.1f}s wall, {calls:,} LLM calls")
            for step, s in sorted(steps.items(), key=lambda kv: -kv[1])[:8]:
                print(f"  {step:55s} {s:6.1f}s")
        store = Store(tmp_path / "data" / "mama.duckdb")
        y = store.read_table("mamabench_yield")
        print(
            "\n"
            + str(y.select("pool", "upstream_rows", "kept", "refused", "out_of_scope", "unclassified", "yield_pct"))
        )
        print(f"upstream rows {int(y['upstream_rows'].sum()):,}; kept {int(y['kept'].sum()):,}")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (ru_maxrss, this process): {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
