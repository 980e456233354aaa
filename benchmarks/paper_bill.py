"""Planned against sent at paper scale: ``plan``'s bound on an empty data folder, the exact plan of the judge once
its pooled pairs exist, and what the run sent, per stage (requests and prompt tokens).

The workload is ``benchmarks/paper_multiple.py``'s (its synthetic bundle of 63,650 x N chunks, its configuration
and its gated test server, which keeps the paper's 70% of the passages); the run goes in phases:

1. ``mama-pipeline plan --select '*'`` on an empty data folder (the bound: configuration and raw inputs alone);
2. ``materialize`` the corpus and queries, the imported run (written from the queries), then ``*pooled_pairs``;
3. ``plan --select judged_labels`` (the exact plan, its inputs built), then ``materialize`` judged_labels alone:
   the judge's requests sent by that step are the figure the exact plan is compared with;
4. ``materialize`` everything else.

What was sent is counted at the server: its answers report as ``usage.prompt_tokens`` the characters of the
messages it received / 4, rounded up (the rule of the project's estimate, which the plan uses for a model with no
local tokenizer, written again here), and the client stores that figure with each answer; requests are the
distinct cache keys answered or failed per stage.

    .venv/bin/python benchmarks/paper_bill.py --multiple 1 --root /tmp/paper-bill
    .venv/bin/python benchmarks/paper_bill.py --multiple 1 --root /tmp/paper-bill --report-only
    .venv/bin/python benchmarks/paper_bill.py --root /tmp/paper-bill --paper-config 0.5 0.7 585

``--paper-config`` plans the paper's own configuration (``config/mamaretrieval-v0.2.yaml``) on the same synthetic
bundle, on an empty data folder, at each rate (requests a second per server, 8 GPUs a server).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.paper_multiple import (  # noqa: E402 - the repository on the path first
    CLI,
    gated_echo,
    run_env,
    write_bundle,
    write_config,
    write_imported_run,
)

CHARS_PER_TOKEN = 4


def counting_echo(delay: float):
    """paper_multiple's gated test server, reporting the characters it received / 4 (rounded up) as prompt tokens."""
    app = gated_echo(delay)
    chat = app.chat

    async def counted(req):
        status, headers, out = await chat(req)
        if status == 200 and isinstance(out, dict) and "usage" in out:
            chars = sum(len(m.get("content") or "") for m in req["messages"])
            out["usage"]["prompt_tokens"] = -(-chars // CHARS_PER_TOKEN)
        return status, headers, out

    app.chat = counted
    return app


def cli(args: list[str], env: dict[str, str], log: Path, must_pass: bool = True) -> str:
    started = time.perf_counter()
    out = subprocess.run([CLI, *args], env=env, cwd=REPO, capture_output=True, text=True)
    with log.open("a") as fh:
        fh.write(f"$ mama-pipeline {' '.join(args)}  # exit {out.returncode}, {time.perf_counter() - started:.0f} s\n")
        fh.write(out.stdout + out.stderr)
    if out.returncode != 0 and must_pass:
        raise SystemExit(f"mama-pipeline {' '.join(args)} exited {out.returncode}; see {log}")
    print(f"  {' '.join(args)[:70]}: {time.perf_counter() - started:.0f} s", flush=True)
    return out.stdout


def sent(db: Path) -> dict[str, tuple[int, int]]:
    """Per stage: (distinct requests answered or failed, the prompt tokens the server reported for them)."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        out: dict[str, tuple[int, int]] = {}
        for stage, n, tokens in con.execute(
            "SELECT stage, count(DISTINCT cache_key), sum(prompt_tokens) FROM llm_responses GROUP BY stage"
        ).fetchall():
            out[stage] = (n, int(tokens or 0))
        if "llm_failures" in have:
            for stage, n in con.execute(
                "SELECT stage, count(DISTINCT cache_key) FROM llm_failures GROUP BY stage"
            ).fetchall():
                out[stage] = (out.get(stage, (0, 0))[0] + n, out.get(stage, (0, 0))[1])
    return out


def run(multiple: float, root: Path, delay: float, concurrency: int) -> None:
    from benchmarks.demo_time import serving

    work = root / f"N{multiple:g}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "empty").mkdir(parents=True)
    chunks = write_bundle(multiple, work / "chunks_for_rag.txt")
    print(f"N = {multiple:g}: {chunks:,} chunks; work folder {work}", flush=True)
    env, log, db = run_env(work), work / "commands.log", work / "data" / "mama.duckdb"
    figures: dict = {"multiple": multiple, "chunks": chunks}
    with serving(__file__, "--delay", str(delay)) as (url, _):
        write_config(multiple, work, url, concurrency, work / "config.yaml")
        (work / "plan_empty.txt").write_text(
            cli(["plan", "--select", "*"], {**env, "MAMA_DATA_DIR": str(work / "empty")}, log)
        )
        assert not any((work / "empty").iterdir()), "plan wrote into the empty data folder"
        cli(["materialize", "--select", "*generated_queries"], env, log)
        figures["imported_rows"] = write_imported_run(db, work / "imported_run.parquet")
        cli(["materialize", "--select", "*pooled_pairs"], env, log)
        before = sent(db)
        (work / "plan_judge.txt").write_text(cli(["plan", "--select", "judged_labels"], env, log))
        cli(["materialize", "--select", "judged_labels"], env, log)
        after = sent(db)
        figures["judged_labels_sent"] = [after["judge"][i] - before.get("judge", (0, 0))[i] for i in (0, 1)]
        rest = cli(["materialize", "--select", "*"], env, log, must_pass=False)  # a failed step: its line says why
        figures["failed"] = re.findall(r"^.*FAILED.*$", rest, re.M)
    figures["sent"] = sent(db)
    (work / "figures.json").write_text(json.dumps(figures, indent=1))
    report(work)


def bounds(text: str) -> dict[str, list[int]]:
    """Per stage, the summed bounds of ``plan``'s blocks: [requests, prompt tokens] (None where not bounded)."""
    out: dict[str, list[int]] = {}
    for stage, body in re.findall(r"^\S+ · (\S+) · .*\n((?:  .*\n?)*)", text, re.M):
        m = re.search(r"bound: at most ([\d,]+) requests", body)
        t = re.search(r"prompt tokens: at most ([\d,]+)", body)
        got = out.setdefault(stage, [0, 0])
        got[0] += int(m.group(1).replace(",", "")) if m else 0
        got[1] += int(t.group(1).replace(",", "")) if t else 0
    return out


def report(work: Path) -> None:
    figures = json.loads((work / "figures.json").read_text())
    bound = bounds((work / "plan_empty.txt").read_text())
    judge_exact = re.search(r"requests ([\d,]+): [\d,]+ cached, ([\d,]+) to send.*?prompt tokens to send ([\d,]+)",
                            (work / "plan_judge.txt").read_text())  # fmt: skip
    print(f"N = {figures['multiple']:g}: {figures['chunks']:,} chunks ({work})")
    print(
        f"{'stage':<26}{'bound requests':>16}{'sent':>10}{'ratio':>8}{'bound tokens':>16}{'sent tokens':>14}{'ratio':>8}"
    )
    for stage, (n, tokens) in sorted(figures["sent"].items()):
        b, bt = bound.get(stage, [0, 0])
        print(
            f"{stage:<26}{b:>16,}{n:>10,}{b / n if n else 0:>8.2f}{bt:>16,}{tokens:>14,}{bt / tokens if tokens else 0:>8.2f}"
        )
    jn, jt = figures["judged_labels_sent"]
    if judge_exact:
        to_send, tokens = (int(judge_exact.group(i).replace(",", "")) for i in (2, 3))
        print(f"judged_labels, exact plan once pooled_pairs exist: {to_send:,} requests, {tokens:,} prompt tokens; "
              f"sent by the step: {jn:,} requests ({to_send / jn - 1:+.2%}), {jt:,} prompt tokens "
              f"({tokens / jt - 1:+.2%})")  # fmt: skip


def paper_bill(root: Path, rates: list[float]) -> None:
    """The paper's configuration (``config/mamaretrieval-v0.2.yaml``: six pooled retrievers, the 100-query audit at
    depth 50, the 62-pair pilot, its quotas) on the synthetic bundle of N = 1: ``plan --select '*'`` on an empty data
    folder at each per-server rate, 8 GPUs a server. The paper's upstream pools and meta-evaluation file are not
    here: the bundled fixtures stand in for them (the classifier, rubric and systems figures are the sample's)."""
    import yaml

    from benchmarks.paper_multiple import RELEASE_CONFIG

    work = root / "N1"
    bundle = work / "chunks_for_rag.txt"
    if not bundle.exists():
        write_bundle(1.0, bundle)
    cfg = yaml.safe_load(RELEASE_CONFIG.read_text())
    cfg["corpus"]["bundle"] = str(bundle)
    cfg["mamabench"].pop("sources", None)
    cfg["calibration"].pop("meta_eval", None)
    config, empty = work / "paper-config.yaml", work / "empty-paper"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    empty.mkdir(exist_ok=True)
    env = {**run_env(work), "MAMA_CONFIG": str(config), "MAMA_DATA_DIR": str(empty)}
    for rate in rates:
        out = cli(["plan", "--select", "*", "--rate", f"{rate:g}", "--gpus-per-server", "8"], env, work / "paper.log")
        (work / f"paper-plan-{rate:g}.txt").write_text(out)
        print(
            f"--rate {rate:g}:\n" + "\n".join(line for line in out.splitlines() if line.startswith(("Bound", "Store")))
        )
    assert not any(empty.iterdir()), "plan wrote into the empty data folder"
    for stage, (n, tokens) in sorted(bounds((work / f"paper-plan-{rates[0]:g}.txt").read_text()).items()):
        print(f"  {stage:<26}{n:>12,} requests {tokens:>16,} prompt tokens")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--multiple", type=float, default=1.0, help="multiple of the paper")
    ap.add_argument("--root", default="/tmp/paper-bill", help="the work folder goes here")
    ap.add_argument("--delay", type=float, default=0.05, help="the test server's answer time, seconds")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight per LLM stage")
    ap.add_argument("--report-only", action="store_true", help="print the figures of an earlier run in --root")
    ap.add_argument("--paper-config", type=float, nargs="+", metavar="RATE", help="plan the paper's configuration "
                    "on the synthetic bundle at these requests a second per server, and stop")  # fmt: skip
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # internal: run the test server on this port
    args = ap.parse_args()
    if args.serve:
        import uvicorn

        uvicorn.run(counting_echo(args.delay), host="127.0.0.1", port=args.serve, log_level="warning", access_log=False)
        return 0
    if args.paper_config:
        paper_bill(Path(args.root), args.paper_config)
        return 0
    if args.report_only:
        report(Path(args.root) / f"N{args.multiple:g}")
        return 0
    run(args.multiple, Path(args.root), args.delay, args.concurrency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
