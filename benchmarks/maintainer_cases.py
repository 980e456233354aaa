"""What an everyday re-run costs after the four changes a benchmark maintainer makes, against the full run.

One finished run of ``benchmarks/paper_multiple.py`` at ``--multiple`` N (default 1: paper scale; its synthetic
bundle, configuration, store, caches and Dagster instance in ``--root``/N<N>, made here or, with ``--reuse``, an
earlier one) is the starting point of every case; its wall time (both invocations) is the denominator. Each case
runs on its own copy of that work folder, made at the same path (the finished folder is set aside meanwhile and put
back after), so no case sees another's changes and the configuration's absolute paths stay as they were; the test
server (``paper_multiple.gated_echo``, the project's fault-injecting fake server, at ``--delay``) listens on the
finished run's port, so the endpoints' settings are unchanged too. The re-run is the everyday
``mama-pipeline materialize --select '*'`` on the multiprocess executor: only what changed, and what depends on it,
runs.

- (0) nothing changed: the control (no run may start);
- (a) ``evaluation.resamples`` changed (to ``--resamples``; default the configured value + 1, so the re-run costs
  what re-runs, not more resampling);
- (b) one retriever added to the configuration (``bm25_k12``: BM25 with k1 1.2, b 0.75) and scored on the existing
  labels: ``retrieval.pool_retrievers`` and ``retrieval.audit.retrievers`` name the retrievers the full run pooled and
  audited (the configured ones), so no pair is added to judge;
- (p) the same retriever added to the pool (neither list set): its new pairs are judged and everything scored from
  the labels runs again; printed for the record, with no target (the judging of new pairs is the work itself);
- (c) a page module edited (``--page-module``, default ``mama_pipeline/evaluation/_retrieval_page.py``, the
  retrieval report page): a comment line appended to its source;
- (d) the judge prompt edited (one sentence of ``judging/_rubric.py``'s system message): ``mama-pipeline plan
  --select judged_labels`` and the materialise command's planning summary, both before anything runs, are
  printed.

An asset's code version hashes the bytes of the package modules its definition reaches
(``mama_pipeline/common/code_version.py``), so (c) and (d) edit the source of a throwaway copy of the package
(``--root``/cases-N<N>/<case>/src, the checkout's other top-level entries linked beside it), first on PYTHONPATH and
the working directory of that case's commands; the checkout is never touched. After each re-run the same command
runs once more and must find nothing to run ("settled").

Printed per case: the steps re-run (count and names, partitions summed), the assets materialised, the wall time of
the re-run and its ratio to the full run's, the issue's target beside it (a and b under 20%, c under 5%, d re-runs
``judged_labels`` and every asset downstream of it through assets the full run made, and the planning summary
names ``judged_labels`` before the first run starts) and each phase's time (copy, edit, plan, re-run, settled check).

    .venv/bin/python benchmarks/maintainer_cases.py [--multiple 1] [--root /tmp/maintainer-cases] [--reuse]
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import paper_multiple as pm  # noqa: E402

JUDGE_MODULE = "mama_pipeline/judging/_rubric.py"
JUDGE_EDIT = (  # one sentence of the judge's system message, and the edited one
    "Judge the passage only on what it says.",
    "Judge the passage only on what it says, never on its source.",
)
JUDGING = "judged_labels"
ADDED_RETRIEVER = {"name": "bm25_k12", "kind": "bm25", "params": {"stemmer": "porter", "stopwords": True, "k1": 1.2, "b": 0.75}}  # fmt: skip
RUN_LINE = re.compile(r"^\[1/\d+\] run ")  # the first run's launch: the planning summary is above it
NOTHING = "nothing changed since the last materialisation"


@dataclass
class Case:
    label: str
    what: str
    target: str
    limit: float | None  # the largest ratio to the full run that meets the target (None: judged otherwise)
    edit: Callable[[Path, Path], Path | None]  # (work folder, case folder) -> the edited checkout copy, if any


@dataclass
class Outcome:
    case: Case
    code: int
    wall: float
    steps: dict[str, pm.Step]
    assets: set[str]
    summary: list[str]
    plan: list[str]
    settled: bool
    phases: list[tuple[str, float]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # (d): downstream assets of judging that did not re-run


# ---- the edits -------------------------------------------------------------------------------------------------


def edit_config(work: Path, change: Callable[[dict], None]) -> None:
    path = work / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    change(cfg)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def edited_checkout(case_dir: Path, module: str, old: str | None, new: str) -> Path:
    """A copy of the package under ``case_dir``/src with ``module``'s source edited (``old`` replaced by ``new``;
    ``old`` None: ``new`` appended), the checkout's other top-level entries linked beside it; returns src."""
    src = case_dir / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for entry in REPO.iterdir():
        if entry.name != "mama_pipeline":
            (src / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "mama_pipeline", src / "mama_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / module
    text = path.read_text()
    if old is not None and old not in text:
        raise SystemExit(f"{module}: the text to edit, {old!r}, is not there; update the case's edit")
    path.write_text(text + new if old is None else text.replace(old, new, 1))
    return src


def cases(resamples: int | None, page_module: str) -> list[Case]:
    def nothing(work: Path, case_dir: Path) -> None:
        return None

    def change_resamples(work: Path, case_dir: Path) -> None:
        def change(cfg: dict) -> None:
            cfg["evaluation"]["resamples"] = resamples or cfg["evaluation"]["resamples"] + 1

        edit_config(work, change)

    def add_retriever(work: Path, case_dir: Path) -> None:
        def change(cfg: dict) -> None:  # scored on the existing labels: the pool and the audit keep their retrievers
            names = [r["name"] for r in cfg["retrieval"]["retrievers"]]
            cfg["retrieval"]["pool_retrievers"] = cfg["retrieval"].get("pool_retrievers") or names
            cfg["retrieval"].setdefault("audit", {})["retrievers"] = (
                cfg["retrieval"]["audit"].get("retrievers") or names
            )
            cfg["retrieval"]["retrievers"].append(ADDED_RETRIEVER)

        edit_config(work, change)

    def pool_retriever(work: Path, case_dir: Path) -> None:
        edit_config(work, lambda cfg: cfg["retrieval"]["retrievers"].append(ADDED_RETRIEVER))

    def edit_page(work: Path, case_dir: Path) -> Path:
        return edited_checkout(case_dir, page_module, None, "# an edit: benchmarks/maintainer_cases.py, case (c)\n")

    def edit_judge_prompt(work: Path, case_dir: Path) -> Path:
        return edited_checkout(case_dir, JUDGE_MODULE, *JUDGE_EDIT)

    return [
        Case("0", "nothing changed (control)", "no run", 0.0, nothing),
        Case("a", "evaluation.resamples changed", "< 20%", 0.20, change_resamples),
        Case("b", f"retriever {ADDED_RETRIEVER['name']} added, scored", "< 20%", 0.20, add_retriever),
        Case("p", f"retriever {ADDED_RETRIEVER['name']} added to the pool", "(no target)", None, pool_retriever),
        Case("c", f"page module edited ({page_module})", "< 5%", 0.05, edit_page),
        Case("d", f"judge prompt edited ({JUDGE_MODULE})", "judging and after", None, edit_judge_prompt),
    ]


# ---- what ran ---------------------------------------------------------------------------------------------------


def materialised(home: Path, since: float = 0.0, until: float = float("inf")) -> set[str]:
    """The assets materialised by the runs created in [since, until)."""
    import dagster as dg

    out = set()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for record in instance.get_run_records():
            if since <= record.create_timestamp.timestamp() < until:
                for rec in instance.all_logs(
                    record.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
                ):
                    out.add(rec.dagster_event.asset_key.to_user_string())
    return out


def downstream(env: dict[str, str], key: str, made: set[str]) -> set[str]:
    """The assets downstream of ``key`` in the definitions ``env`` loads, through assets in ``made`` only (an asset
    the full run did not make, e.g. the scores of submissions when there are none, passes no change on)."""
    code = (
        "from mama_pipeline.definitions import defs; g = defs.resolve_asset_graph()\n"
        "for k in g.get_all_asset_keys(): print(k.to_user_string(), *(c.to_user_string() for c in g.get(k).child_keys))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    children = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines() if line.strip()}
    seen, todo = set(), [key]
    while todo:
        for child in children.get(todo.pop(), []):
            if child in made and child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def planning_summary(log: Path) -> list[str]:
    """The materialise command's planning lines: from its count of what runs to the first run's launch."""
    lines = log.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if "inputs observed;" in line), len(lines))
    end = next((i for i in range(start, len(lines)) if RUN_LINE.match(lines[i])), len(lines))
    return lines[start:end]


# ---- a case -----------------------------------------------------------------------------------------------------


def run_case(case: Case, work: Path, out: Path, port: int, delay: float, judged_after: set[str]) -> Outcome:
    """``case`` on a copy of the finished ``work`` folder, made at its path while the original waits beside it."""
    from benchmarks.demo_time import serving

    kept = work.with_name(work.name + ".full")
    case_dir = out / case.label
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    phases: list[tuple[str, float]] = []

    def phase(name: str, started: float) -> None:
        phases.append((name, time.perf_counter() - started))
        print(f"  ({case.label}) {name}: {phases[-1][1]:.1f} s", flush=True)

    work.rename(kept)
    try:
        t = time.perf_counter()
        shutil.copytree(kept, work, symlinks=True)
        phase("copy of the finished work folder", t)
        t = time.perf_counter()
        src = case.edit(work, case_dir)
        env, cwd = pm.run_env(work), src or REPO
        if src:
            env["PYTHONPATH"] = os.pathsep.join([str(src), env["PYTHONPATH"]])
        phase("edit", t)
        log, monitors = case_dir / "materialize.log", []
        with serving(pm.__file__, "--delay", str(delay), port=port):
            plan = []
            if case.label == "d":
                t = time.perf_counter()
                done = subprocess.run([pm.CLI, "plan", "--select", JUDGING], env=env, cwd=cwd, capture_output=True, text=True)  # fmt: skip
                plan = (done.stdout + done.stderr).strip().splitlines()
                phase(f"mama-pipeline plan --select {JUDGING}", t)
            since, t = time.time(), time.perf_counter()
            code = pm.materialize("*", env, log, monitors, cwd=cwd)
            wall = time.perf_counter() - t
            phase(f"re-run, mama-pipeline materialize --select '*' (exit {code})", t)
            home = work / "dagster_home"
            steps, assets = pm.step_figures(home, monitors, since), materialised(home, since)
            t = time.perf_counter()
            again = case_dir / "settled.log"
            pm.materialize("*", env, again, [], cwd=cwd)
            settled = NOTHING in again.read_text()
            phase(f"settled check ({'nothing to run' if settled else 'it ran again: see ' + str(again)})", t)
        outcome = Outcome(case, code, wall, steps, assets, planning_summary(log), plan, settled, phases)
        if case.label == "d":
            outcome.missing = sorted((judged_after | {JUDGING}) - assets)
        return outcome
    finally:
        t = time.perf_counter()
        shutil.rmtree(work, ignore_errors=True)
        kept.rename(work)
        shutil.rmtree(case_dir / "src", ignore_errors=True)
        phase("work folder put back", t)


def met(o: Outcome, full_wall: float) -> bool | None:
    """Whether the case met its target (None: a case printed for the record, whose run need only succeed)."""
    if o.code != 0 or not o.settled:
        return False
    if o.case.label == "d":
        return not o.missing and any(line.lstrip().startswith(f"{JUDGING} ") for line in o.summary)
    if o.case.limit is None:
        return None
    if o.case.limit == 0.0:
        return not o.steps
    return o.wall / full_wall < o.case.limit


# ---- the run ----------------------------------------------------------------------------------------------------


class PaperResult(pickle.Unpickler):
    """Reads the ``result.pickle`` of ``paper_multiple.py``, whose classes it pickled as ``__main__``'s."""

    def find_class(self, module: str, name: str):
        return super().find_class(pm.__name__ if module == "__main__" else module, name)


def finished_run(multiple: float, root: Path, reuse: bool, delay: float, concurrency: int) -> pm.Result:
    work = root / f"N{multiple:g}"
    kept = work.with_name(work.name + ".full")
    if kept.exists():  # an interrupted case: the finished folder goes back
        shutil.rmtree(work, ignore_errors=True)
        kept.rename(work)
        print(f"{kept}: a case was interrupted; the finished work folder was put back", flush=True)
    saved = work / "result.pickle"
    if reuse:
        if not saved.exists():
            raise SystemExit(f"{saved}: no finished run at N = {multiple:g} to reuse; run without --reuse")
        print(f"full run: reusing {work} (it must have had --delay {delay:g})", flush=True)
    else:
        print(f"full run: benchmarks/paper_multiple.py --multiple {multiple:g} --root {root}", flush=True)
        args = ["--multiple", f"{multiple:g}", "--root", str(root), "--delay", str(delay)]
        subprocess.run([sys.executable, pm.__file__, *args, "--concurrency", str(concurrency)], cwd=REPO, check=False)
        if not saved.exists():
            raise SystemExit(f"the full run wrote no {saved}")
    with saved.open("rb") as fh:
        result = PaperResult(fh).load()
    if result.failed:
        raise SystemExit(f"the full run failed: {result.failed}")
    return result


def server_port(work: Path) -> int:
    """The finished run's test server port (its judge's endpoint), checked free."""
    cfg = yaml.safe_load((work / "config.yaml").read_text())
    port = urlparse(cfg["llm"]["judge"]["base_urls"][0]).port
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: closed connections don't count
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise SystemExit(
                f"port {port}, the finished run's test server's, is taken ({exc}); try again later"
            ) from None
    return port


def report(full: pm.Result, outcomes: list[Outcome], multiple: float) -> None:
    print(f"\nN = {multiple:g}: full run {full.wall:.0f} s (both invocations, {len(full.steps)} steps); each case "
          f"re-run with mama-pipeline materialize --select '*'")  # fmt: skip
    head = f"{'case':<52}{'steps':>6}{'assets':>7}{'wall s':>9}{'of full':>9}  {'target':<19}{'':<5}settled"
    print(head + "\n" + "-" * len(head))
    for o in outcomes:
        ratio = f"{100 * o.wall / full.wall:.1f}%"
        verdict = {True: "pass", False: "FAIL", None: "-"}[met(o, full.wall)]
        print(f"({o.case.label}) {o.case.what[:47]:<48}{len(o.steps):>6}{len(o.assets):>7}{o.wall:>9.1f}{ratio:>9}  "
              f"{o.case.target:<19}{verdict:<5}{'yes' if o.settled else 'NO'}")  # fmt: skip
    for o in outcomes:
        print(f"\n({o.case.label}) {o.case.what}; exit {o.code}; phases: "
              + ", ".join(f"{name.split(',')[0].split(' (')[0]} {s:.1f} s" for name, s in o.phases))  # fmt: skip
        names = ", ".join(f"{k}{f' x{s.runs}' if s.runs > 1 else ''} {s.wall:.1f} s" for k, s in sorted(o.steps.items(), key=lambda kv: -kv[1].wall))  # fmt: skip
        print(
            textwrap.indent(
                textwrap.fill(f"steps re-run ({len(o.steps)}, slowest first): {names or 'none'}", 116), "  "
            )
        )
        if o.case.label == "d":
            print("  mama-pipeline plan, before the run:")
            print("\n".join(f"    | {line}" for line in o.plan))
            print(
                f"  downstream of {JUDGING} (through assets the full run made) not re-run: {', '.join(o.missing) or 'none'}"
            )
        print("  planning summary, before the first run started:")
        print("\n".join(f"    | {line}" for line in o.summary) or "    | (none)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--multiple", type=float, default=1.0, help="multiple of the paper (1: paper scale)")
    ap.add_argument("--root", default="/tmp/maintainer-cases", help="the full run's work folder and the cases' logs")
    ap.add_argument("--delay", type=float, default=0.05, help="the test server's answer time, seconds")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight per LLM stage")
    ap.add_argument("--reuse", action="store_true", help="start from the finished full run already in --root")
    ap.add_argument("--resamples", type=int, help="case (a)'s evaluation.resamples (default: the configured + 1)")
    ap.add_argument("--page-module", default="mama_pipeline/evaluation/_retrieval_page.py", help="case (c)'s module")
    ap.add_argument("--cases", default="0abpcd", help="which cases to run (letters; 0: the control)")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    if not (REPO / args.page_module).is_file():
        ap.error(f"--page-module {args.page_module}: no such file in {REPO}")
    chosen = [c for c in cases(args.resamples, args.page_module) if c.label in args.cases]
    t = time.perf_counter()
    full = finished_run(args.multiple, root, args.reuse, args.delay, args.concurrency)
    print(
        f"phase: full run ready in {time.perf_counter() - t:.0f} s (its wall time, the denominator: {full.wall:.0f} s)",
        flush=True,
    )
    work = root / f"N{args.multiple:g}"
    port = server_port(work)
    env = pm.run_env(work)
    judged_after = downstream(env, JUDGING, materialised(work / "dagster_home"))
    out = root / f"cases-N{args.multiple:g}"
    outcomes = []
    for case in chosen:
        print(f"case ({case.label}): {case.what}", flush=True)
        outcomes.append(run_case(case, work, out, port, args.delay, judged_after))
    report(full, outcomes, args.multiple)
    return 0 if all(met(o, full.wall) is not False for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
