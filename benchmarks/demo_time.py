"""Wall time of the demo (cold and warm) and of a no-op re-run of the whole bundled sample.

- cold demo: ``mama-pipeline demo`` in a fresh data directory (empty LLM cache, no
  embeddings, no indexes) with the embedded model; its LLM request count is printed;
- warm demo: the same command again in that directory (every answer, vector and index cached);
- whole sample, no-op re-run: ``mama-pipeline materialize --executor in_process`` of every
  asset on ``mama_pipeline/sample_config.yaml`` with its LLM stages pointed at the project's
  fast OpenAI-compatible test server (whose query and multi-passage question writers answer
  with a passage's first words, so that BM25 finds something), run once to fill the caches and then again with
  nothing changed (the second run is the figure: it observes the inputs, finds every asset
  unchanged and launches no run); ``--multiprocess`` adds the same no-op re-run with the
  multiprocess executor (``dagster asset materialize`` runs, every step its own process, had
  anything changed), printed beside the in-process figure.

Every figure is printed with the machine's load average beside it (the targets assume a
quiet 2-core machine: cold demo <= 180 s, no-op re-run <= 60 s with either executor).

    .venv/bin/python benchmarks/demo_time.py [--root /tmp/demo-time] [--skip-demo] [--skip-sample] [--multiprocess]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CLI = str(Path(sys.executable).with_name("mama-pipeline"))
SAMPLE_CONFIG = REPO / "mama_pipeline" / "sample_config.yaml"


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


CPU = {"seconds": 0.0}  # CPU seconds of the last command and its children (a load-independent figure)


def timed(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, int, str]:
    """Run ``cmd``; returns (wall seconds, exit code, its output), the output also kept in ``log``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log.write_text(proc.stdout + proc.stderr)
    return seconds, proc.returncode, proc.stdout


def llm_requests(output: str) -> str:
    found = re.search(r"(\d+) requests answered this run(?: \(([^)]*)\))?", output)
    return f"{found.group(1)} LLM requests ({found.group(2)})" if found else "LLM requests: not reported"


FIGURES: list[tuple[str, float, int, str]] = []  # (label, wall seconds, exit code, load) for the closing table
# a no-op re-run plans nothing and launches no run (run_plan.changed_steps), whichever the executor
TARGETS = {
    "demo, cold": 180.0,
    "whole sample, no-op re-run (in process)": 60.0,
    "whole sample, no-op re-run (multiprocess)": 60.0,
}


def report(label: str, seconds: float, code: int, extra: str = "") -> None:
    status = "ok" if code == 0 else f"FAILED (exit {code})"
    FIGURES.append((label, seconds, code, load()))
    print(
        f"{label:<44} {seconds:8.1f} s wall, {CPU['seconds']:7.1f} s CPU  {status}  [{load()}]"
        f"{'  ' + extra if extra else ''}",
        flush=True,
    )


def last_line(output: str) -> str:
    """A command's last output line (a no-op re-run's: that nothing changed)."""
    return output.strip().splitlines()[-1] if output.strip() else "(no output)"


def slowest_steps(output: str, n: int = 8) -> str:
    """The ``n`` slowest steps of a run's terminal lines (``  12 ok     name   3.4 s``)."""
    steps = [
        (float(m.group(2)), m.group(1))
        for m in re.finditer(r"^\s+\d+ (?:ok|FAILED)\s+(.+?)\s+([\d.]+) s$", output, re.M)
    ]
    return ", ".join(f"{name} {sec:.1f} s" for sec, name in sorted(steps, reverse=True)[:n])


def llm_breakdown(db: Path) -> list[str]:
    """Per stage: requests, prompt tokens (of them served from the server's prompt cache), completion
    tokens and the summed request latency, from the LLM cache of a cold run."""
    import duckdb

    if not db.exists():
        return []
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT stage, count(*), sum(prompt_tokens), sum(cached_tokens), sum(completion_tokens), "
            "sum(latency_s), sum(CASE WHEN status = 'ok' THEN 0 ELSE 1 END) FROM llm_responses "
            "GROUP BY stage ORDER BY sum(latency_s) DESC"
        ).fetchall()
    return [
        f"  {stage:<22} {n:3d} requests ({bad} failed), {pt or 0:6d} prompt tokens ({ct or 0} cached), "
        f"{out or 0:5d} completion tokens, {lat or 0:6.1f} s summed latency (with queueing)"
        for stage, n, pt, ct, out, lat, bad in rows
    ]


def closing_table() -> None:
    print("\nside by side (targets on a quiet 2-core machine):", flush=True)
    for label, seconds, code, at in FIGURES:
        target = next(
            (
                f"target <= {t:.0f} s: {'met' if seconds <= t and code == 0 else 'NOT met'}"
                for prefix, t in TARGETS.items()
                if label.startswith(prefix)
            ),
            "",
        )
        print(f"  {label:<44} {seconds:8.1f} s  {target:<24} [{at}]", flush=True)


def demo_times(root: Path, env: dict[str, str]) -> None:
    data = root / "demo"
    shutil.rmtree(data, ignore_errors=True)
    env = {**env, "MAMA_DATA_DIR": str(data)}
    env.pop("MAMA_CONFIG", None)
    seconds, code, out = timed([CLI, "demo"], env, root / "demo-cold.log")
    report("demo, cold (fresh data dir, empty LLM cache)", seconds, code, llm_requests(out))
    print(f"  slowest steps: {slowest_steps(out)}", flush=True)
    for line in llm_breakdown(data / "mama.duckdb"):
        print(line, flush=True)
    seconds, code, out = timed([CLI, "demo"], env, root / "demo-warm.log")
    report("demo, warm (re-run, everything cached)", seconds, code, llm_requests(out))


def sample_config_with(url: str, path: Path) -> None:
    """The bundled sample's configuration with every LLM stage and answering system on ``url`` (written
    beside the original, so its relative input paths resolve as they do there)."""
    from mama_pipeline.llm.settings import LLM_STAGES

    cfg = yaml.safe_load(SAMPLE_CONFIG.read_text())
    endpoint = {"base_urls": [url], "model": "fake-model", "cache_namespace": "fake-server", "embedded": False}
    for stage in LLM_STAGES:
        cfg["llm"].setdefault(stage, {}).update(endpoint)
    if "cross_model_judge" in cfg["llm"]:  # must name a model other than the judge's
        cfg["llm"]["cross_model_judge"]["model"] = "other-fake-model"
    for system in (cfg.get("systems") or {}).get("entries", []):
        system.update(endpoint)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


class PassageEcho:
    """The test server, except that the query writer's question is the passage's first words."""

    def __new__(cls):
        from mama_pipeline_tests.support.fake_llm_server import FakeLLM

        class Echo(FakeLLM):
            async def chat(self, req):
                status, headers, out = await super().chat(req)
                schema = (req.get("response_format") or {}).get("json_schema", {}).get("schema", {})
                fields = schema.get("properties", {})
                if status == 200 and ("query" in fields or "question" in fields):
                    user = next(m["content"] for m in reversed(req["messages"]) if m.get("role") == "user")
                    answer = json.loads(out["choices"][0]["message"]["content"])
                    if "query" in fields:
                        passage = user.split("<<<", 1)[-1].split(">>>", 1)[0]
                        answer["query"] = " ".join(passage.split()[:12]) + "?"
                    elif isinstance(answer.get("question"), str):  # the multi-passage writer: the first passage
                        passage = user.split("<passage", 1)[-1].split(">", 1)[-1].split("</passage>", 1)[0]
                        answer["question"] = " ".join(passage.split()[:12]) + "?"
                    out["choices"][0]["message"]["content"] = json.dumps(answer)
                return status, headers, out

        return Echo(0.0, 0.0)


@contextlib.contextmanager
def serving(script: str, *extra: str, port: int | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """A benchmark's test LLM server, ``script --serve PORT *extra`` on ``port`` (default: a free one), until it
    answers; yields its URL and process (this file's: the passage echo)."""
    from mama_pipeline_tests.support.processes import free_port

    port = port or free_port()
    cmd = [sys.executable, script, "--serve", str(port), *extra]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("the test LLM server did not start") from None
                time.sleep(0.1)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(10)


def sample_times(root: Path, env: dict[str, str], multiprocess: bool, noop_only: bool = False) -> None:
    data = root / "sample"
    if not noop_only:
        shutil.rmtree(data, ignore_errors=True)
    config = SAMPLE_CONFIG.with_name(f".demo_time_sample_config-{os.getpid()}.yaml")
    try:
        with serving(__file__) as (url, _):
            sample_config_with(url, config)
            env = {**env, "MAMA_DATA_DIR": str(data), "MAMA_CONFIG": str(config), "MAMA_LLM_API_KEY": "unused"}
            cmd = [CLI, "materialize", "--select", "*", "--executor", "in_process"]
            if not noop_only:
                seconds, code, _ = timed(cmd, env, root / "sample-first.log")
                report("whole sample, first run (fast LLM server)", seconds, code)
            seconds, code, out = timed(cmd, env, root / "sample-noop.log")
            report("whole sample, no-op re-run (in process)", seconds, code)
            print(f"  {last_line(out)}", flush=True)
            if multiprocess:
                cmd = [CLI, "materialize", "--select", "*", "--executor", "multiprocess"]
                seconds, code, out = timed(cmd, env, root / "sample-noop-multiprocess.log")
                report("whole sample, no-op re-run (multiprocess)", seconds, code)
                print(f"  {last_line(out)}", flush=True)
    finally:
        config.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/demo-time", help="data directories and logs go here")
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--skip-sample", action="store_true")
    ap.add_argument("--multiprocess", action="store_true", help="also time the multiprocess no-op re-run")
    ap.add_argument("--noop-only", action="store_true", help="sample: only the no-op re-run (of an earlier --root)")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # internal: run the test LLM server on this port
    args = ap.parse_args()
    if args.serve:
        import uvicorn

        uvicorn.run(PassageEcho(), host="127.0.0.1", port=args.serve, log_level="warning", access_log=False)
        return
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    print(f"mama_pipeline demo timing; logs in {root}", flush=True)
    if not args.skip_demo:
        demo_times(root, env)
    if not args.skip_sample:
        sample_times(root, env, args.multiprocess, args.noop_only)
    closing_table()


if __name__ == "__main__":
    main()
