"""The paper's workload times N through the real pipeline: wall time, memory and pairs per Dagster step.

For each ``--multiple`` N a work folder gets a synthetic bundle of 63,650 x N chunks
(``benchmarks/corpus_scale.py``'s generator: 87 sources, the released tiers, their quotas
and the short sources times N, so that about 4,540 x N chunks are sampled), a configuration
(MAMA_CONFIG), a data directory (MAMA_DATA_DIR) and a Dagster instance (DAGSTER_HOME), and
``mama-pipeline materialize`` runs every asset on the multiprocess executor (each step its
own process, forked from a forkserver) in two invocations: the corpus and queries first,
then everything else, since the imported run below names the query ids the first wrote.

In:
- corpus, sampling, the answerability gate and query writer (the test server keeps about
  70% of the passages, the paper's 3,185 of 4,540, by a hash of the passage, and its question
  is 16 words spread over the passage, so BM25 finds something);
- four retrievers, pooled at top-20 with each query's seed chunk, ranked to depth 30 for the
  completeness audit (100 x N queries): ``bm25`` (pyserini), ``emb`` (``openai_embeddings``
  against the test server, 64-dimensional hash vectors, exact FAISS search), ``imported`` (a
  parquet run the benchmark writes: each query's 30 chunks nearest its seed chunk in the same
  source) and ``rrf`` over bm25 and emb;
- judging (4 shards), the reference judge on a 62-pair pilot, audits, evaluation (scoreboard,
  significance, segments; the bundled MIRIAD sample with bm25 only, a fixed size), the
  robustness track (every query's five variants, LLM rewrites of every query, variants ranked
  by bm25 only: the test server's hash vectors would give every variant an unrelated top-20,
  all of it new holes; every hole judged), mamabench, calibration, clinician validation (the
  sample's synthetic annotators), the answering systems, leaderboards, reports and both releases.
Every LLM stage and the embeddings go to the project's test server
(``mama_pipeline_tests/support/fake_llm_server.py``) answering after ``--delay`` seconds;
every stage sends ``--concurrency`` requests at a time, so a stage's ideal is
concurrency / delay requests per second.

Out: the multi-passage track (configured with no sets: its steps run and find nothing to do)
and every retriever that needs a local model (dense, sparse, rerank: a GPU's work at this
scale). Mamabench, calibration, the systems, the BEIR sample and the clinician samples keep the
bundled sample's fixed sizes; the corpus, quotas, queries, pools, audit and variants are times N.

Memory: the benchmark polls the process tree of ``mama-pipeline`` every 0.2 s (psutil) and
sums resident set sizes (pages shared after a fork are counted in each process that maps them).
Each step's events on the Dagster instance give its start, end and process id: a step's "own"
peak is that process's largest RSS; its "tree" peak is the largest sum while it ran (steps of
one run may overlap: at most two at a time, config/materialize-run-config.yaml).

    .venv/bin/python benchmarks/paper_multiple.py --multiple 0.1 1 [--root /tmp/paper-multiple]

``--rerun SELECTION`` measures again some steps of a finished run (its store, caches and instance kept):
``mama-pipeline materialize --select SELECTION`` on the same work folder, each step's figures printed beside
those of the full run, e.g. after a change to those steps. It writes no result.pickle: the full run's figures
stay those of the full run.

    .venv/bin/python benchmarks/paper_multiple.py --multiple 10 --rerun 'key:robustness_scoreboard' --root /tmp/pm
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CLI = str(Path(sys.executable).with_name("mama-pipeline"))
SAMPLE_CONFIG = REPO / "mama_pipeline" / "sample_config.yaml"
RELEASE_CONFIG = REPO / "config" / "mamaretrieval-v0.2.yaml"
KEEP_SHARE = 3185 / 4540  # the paper's gate: 3,185 of 4,540 sampled chunks kept
POLL_S = 0.2
MIB = 2**20
QUESTION_WORDS = 16  # the test server's questions: words spread over the passage (queries.max_words is 20)
SHOWN_STEPS = 25  # the slowest steps at the last multiple are listed; the rest summed


def load() -> tuple[float, float, float]:
    return os.getloadavg()


# ---- the test server -------------------------------------------------------------------------------


def gated_echo(delay: float):
    """The test server of ``benchmarks/demo_time.py``, answering after ``delay`` s. Its query writer turns a passage
    down (query null) unless a hash of it falls in the paper's share; a kept passage's question is 16 words spread
    over the whole passage (the synthetic passages share their first words, so demo_time's first 12 words make
    duplicate questions, which the gate drops)."""
    from benchmarks.demo_time import PassageEcho

    app = PassageEcho()
    app.delay = delay
    echo = app.chat

    async def chat(req):
        status, headers, out = await echo(req)
        schema = (req.get("response_format") or {}).get("json_schema", {}).get("schema", {})
        if status == 200 and "query" in schema.get("properties", {}) and "reason" in schema.get("properties", {}):
            user = next(m["content"] for m in reversed(req["messages"]) if m.get("role") == "user")
            answer = json.loads(out["choices"][0]["message"]["content"])
            words = user.split("<<<", 1)[-1].split(">>>", 1)[0].split()
            kept = int(hashlib.sha256(user.encode()).hexdigest()[:8], 16) / 2**32 < KEEP_SHARE
            answer["query"] = (
                " ".join(words[:: max(1, len(words) // QUESTION_WORDS)][:QUESTION_WORDS]) + "?" if kept else None
            )
            out["choices"][0]["message"]["content"] = json.dumps(answer)
        return status, headers, out

    app.chat = chat
    return app


# ---- workload ----------------------------------------------------------------------------------------


def write_bundle(multiple: float, path: Path) -> int:
    from benchmarks.corpus_scale import source_specs
    from mama_pipeline.corpus._bundle import write_text_bundle
    from mama_pipeline.sample_data.corpus.make_sample_corpus import generate_source

    seen: set[str] = set()
    return write_text_bundle(path, (c for spec in source_specs(multiple) for c in generate_source(spec, seen)))


def write_config(multiple: float, work: Path, url: str, concurrency: int, path: Path) -> None:
    """The bundled sample's configuration (absolute input paths) with the paper's corpus, tiers and quotas times
    ``multiple``, the four retrievers, and every LLM stage and system on ``url``."""
    from mama_pipeline.llm.settings import LLM_STAGES, LLMSettings

    cfg = yaml.safe_load(SAMPLE_CONFIG.read_text())
    here = SAMPLE_CONFIG.parent
    cfg["data_dir"] = str(work / "data")
    cfg["calibration"]["meta_eval"]["path"] = str(here / cfg["calibration"]["meta_eval"]["path"])
    for beir in cfg["evaluation"]["beir"]:
        beir.update(path=str(here / beir["path"]), retrievers=["bm25"])
    corpus = yaml.safe_load(RELEASE_CONFIG.read_text())["corpus"]
    for tier in corpus["tiers"].values():
        tier["quota"] = max(1, round(tier["quota"] * multiple))
    cfg["corpus"] = {**corpus, "bundle": str(work / "chunks_for_rag.txt")}
    cfg["retrieval"] = {
        "retrievers": [
            {"name": "bm25", "kind": "bm25", "params": {"stemmer": "porter", "stopwords": True, "k1": 0.9, "b": 0.4}},
            {
                "name": "emb",
                "kind": "openai_embeddings",
                "params": {"base_url": url, "model": "fake-embedder", "dimensions": 64, "batch_size": 256},
            },
            {"name": "imported", "kind": "imported", "params": {"path": str(work / "imported_run.parquet")}},
            {"name": "rrf", "kind": "rrf", "params": {"runs": ["bm25", "emb"], "k": 60}},
        ],
        "pool_depth": 20,
        "include_seed_chunk": True,
        "audit": {"n_queries": max(1, round(100 * multiple)), "seed": 0, "depth": 30},
    }
    cfg["judging"] = {"shards": 4, "pilot_size": 62}
    cfg["robustness"] = {"retrievers": ["bm25"], "release": True, "resamples": 1000}
    cfg["multipassage"] = {"sets_per_source": {}, "dense_retriever": "emb", "release": False}
    endpoint = {"base_urls": [url], "model": "fake-model", "cache_namespace": "fake-server", "embedded": False}
    for stage in LLM_STAGES:
        if LLMSettings.model_fields[stage].default is not None:  # an optional stage (cross_model_judge) stays unset
            cfg["llm"].setdefault(stage, {}).update(endpoint, concurrency=concurrency)
    for system in cfg["systems"]["entries"]:
        system.update(endpoint, concurrency=concurrency)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def write_imported_run(db: Path, out: Path, depth: int = 30) -> int:
    """Each query's ``depth`` chunks nearest its seed chunk (by position) in the seed's source, scored
    1 / (1 + distance): a stand-in for a run made outside the pipeline."""
    from mama_pipeline.store import Store

    with Store(db).connect() as con:
        con.execute(
            f"""COPY (
                  SELECT query_id, chunk_id, score FROM (
                    SELECT q.query_id, c.chunk_id, 1.0 / (1 + abs(c.ordinal - s.ordinal)) AS score,
                           row_number() OVER (PARTITION BY q.query_id
                                              ORDER BY abs(c.ordinal - s.ordinal), c.ordinal) AS r
                    FROM generated_queries q
                    JOIN corpus_chunks s ON s.chunk_id = q.seed_chunk_id
                    JOIN corpus_chunks c ON c.source = s.source AND abs(c.ordinal - s.ordinal) <= {depth}
                  ) WHERE r <= {depth} ORDER BY query_id, r
                ) TO '{out}' (FORMAT parquet)"""
        )
        return con.execute(f"SELECT count(*) FROM '{out}'").fetchone()[0]


# ---- measurement -------------------------------------------------------------------------------------


@dataclass
class TreeMonitor:
    """Polls a process tree: the summed RSS at each poll, each process's peak, the 1-minute load average."""

    root: int
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (time, tree RSS, largest process RSS)
    peak_of: dict[int, int] = field(default_factory=dict)  # pid -> its peak RSS
    loads: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.root)
        except psutil.NoSuchProcess:
            return
        last_load = 0.0
        while not self._stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            total = largest = 0
            for p in procs:
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                total += rss
                largest = max(largest, rss)
                self.peak_of[p.pid] = max(self.peak_of.get(p.pid, 0), rss)
            now = time.time()
            self.samples.append((now, total, largest))
            if now - last_load >= 5:
                self.loads.append(os.getloadavg()[0])
                last_load = now
            self._stop.wait(POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def tree_peak(self, start: float, end: float) -> int:
        return max((t for s, t, _ in self.samples if start <= s <= end), default=0)


@dataclass
class Step:
    key: str
    runs: int = 0
    wall: float = 0.0
    own_peak: int = 0  # largest RSS of a process that ran this step
    tree_peak: int = 0  # largest summed RSS of the tree while it ran
    http_calls: int = 0
    client_wall: float = 0.0
    pids: set[int] = field(default_factory=set)


def step_figures(home: Path, monitors: list[TreeMonitor], since: float = 0.0) -> dict[str, Step]:
    """Per step key (its partitions summed): wall, memory and LLM calls, from the instance's events of the runs
    started after ``since`` (not the runs that observe the inputs: they run in the launching command's process,
    which is no step's)."""
    import dagster as dg

    from mama_pipeline.run_plan import OBSERVATION_TAGS

    steps: dict[str, Step] = {}
    ends = {dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for record in instance.get_run_records():
            run = record.dagster_run
            if OBSERVATION_TAGS.items() <= run.tags.items() or record.create_timestamp.timestamp() < since:
                continue
            started: dict[str, tuple[float, int]] = {}
            for rec in instance.all_logs(run.run_id):
                ev = rec.dagster_event
                if ev is None or rec.step_key is None:
                    continue
                step = steps.setdefault(rec.step_key, Step(rec.step_key))
                if ev.event_type == dg.DagsterEventType.STEP_START:
                    started[rec.step_key] = (rec.timestamp, ev.pid)
                elif ev.event_type in ends and rec.step_key in started:
                    t0, pid = started.pop(rec.step_key)
                    step.runs += 1
                    step.wall += rec.timestamp - t0
                    step.pids.add(pid)
                    for m in monitors:
                        step.own_peak = max(step.own_peak, m.peak_of.get(pid, 0))
                        step.tree_peak = max(step.tree_peak, m.tree_peak(t0, rec.timestamp))
                elif ev.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
                    # one LLM or embeddings client's figures: "<prefix>wall_s" with "<prefix>http_calls" beside it (a
                    # step may also copy the calls under another key, e.g. variant_holes: judge/http_calls, judge/...)
                    meta = rec.asset_materialization.metadata
                    for name, value in meta.items():
                        calls = meta.get(name.removesuffix("wall_s") + "http_calls")
                        if name.endswith("/wall_s") and calls is not None:
                            step.http_calls += int(calls.value)
                            step.client_wall += float(value.value)
    return {k: s for k, s in steps.items() if s.runs}


@dataclass
class Result:
    multiple: float
    chunks: int
    wall: float
    steps: dict[str, Step]
    counts: dict[str, int]
    tree_peak: int
    largest_peak: int
    orchestration_peak: int  # largest RSS of a process that ran no step (CLI, run workers, forkserver)
    judge_calls: int
    judge_client_wall: float
    loads: tuple[list[float], tuple[float, float, float], tuple[float, float, float]]
    server_peak: int
    failed: str = ""


def table_counts(db: Path) -> dict[str, int]:
    from mama_pipeline.store import Store

    tables = ["corpus_chunks", "sampled_chunks", "generated_queries", "rankings", "pooled_pairs", "judged_labels",
              "judgments", "audit_judgments", "reference_judgments", "variant_holes", "variant_labels",
              "llm_responses"]  # fmt: skip
    out = {}
    with Store(db).connect() as con:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        for t in tables:
            out[t] = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] if t in have else -1
    return out


def materialize(
    select: str, env: dict[str, str], log: Path, monitors: list[TreeMonitor], *extra: str, cwd: Path = REPO
) -> int:
    """``mama-pipeline materialize --select select *extra`` run from ``cwd`` (the checkout whose package it runs),
    its output appended to ``log`` and its process tree polled; returns its exit status."""
    with log.open("a") as fh:
        proc = subprocess.Popen(
            [CLI, "materialize", "--select", select, *extra], env=env, cwd=cwd, stdout=fh, stderr=fh
        )
        monitor = TreeMonitor(proc.pid)
        code = proc.wait()
        monitor.stop()
    monitors.append(monitor)
    return code


def first_phase_keys(env: dict[str, str]) -> list[str]:
    """The assets of the first invocation (the corpus and queries, with the assets that run with them)."""
    code = (
        "from mama_pipeline.definitions import defs; from mama_pipeline.run_plan import expand_selection, "
        "selected_keys; g = defs.resolve_asset_graph(); "
        "print(' '.join(sorted(k.to_user_string() for k in expand_selection(g, selected_keys(defs, "
        "'*generated_queries')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


def run_env(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "MAMA_CONFIG": str(work / "config.yaml"),
        "MAMA_DATA_DIR": str(work / "data"),
        "DAGSTER_HOME": str(work / "dagster_home"),
        "MAMA_LLM_API_KEY": "unused",
        "MAMA_EMBEDDINGS_API_KEY": "unused",
    }


def rerun_steps(multiple: float, root: Path, select: str, delay: float, concurrency: int) -> int:
    """Materialise ``select`` again on a finished run's work folder; each step beside its full-run figures."""
    work = root / f"N{multiple:g}"
    saved = work / "result.pickle"
    if not saved.exists():
        raise SystemExit(f"{saved}: no finished run at N = {multiple:g} to re-run steps of; run it first")
    full: Result = pickle.loads(saved.read_bytes())
    log = work / "rerun.log"
    monitors: list[TreeMonitor] = []
    load_before = load()
    from benchmarks.demo_time import serving

    with serving(__file__, "--delay", str(delay)) as (url, _):
        write_config(multiple, work, url, concurrency, work / "config.yaml")
        since = time.time()
        code = materialize(select, run_env(work), log, monitors, "--all")  # changed or not
        wall = time.time() - since
    steps = step_figures(work / "dagster_home", monitors, since)
    loads = [x for m in monitors for x in m.loads]
    print(f"N = {multiple:g}, re-run of {select!r} in {wall:.0f} s (exit {code}; log {log}); 1-min load "
          f"{load_before[0]:.1f} before, mean {sum(loads) / max(len(loads), 1):.1f} during")  # fmt: skip
    print(f"{'step':<36}{'full run: wall s / own / tree MiB':>36}{'re-run: wall s / own / tree MiB':>36}")
    for key in sorted(steps, key=lambda k: -steps[k].own_peak):
        cells = [
            f"{s.wall:7.1f} s {mib(s.own_peak):>6} {mib(s.tree_peak):>6}" if s else "-"
            for s in (full.steps.get(key), steps[key])
        ]
        print(f"{key:<36}" + "".join(f"{c:>36}" for c in cells))
    print(f"re-run: peak RSS of the whole tree {mib(max((t for m in monitors for _, t, _ in m.samples), default=0))} "
          f"MiB, of the largest process {mib(max((p for m in monitors for p in m.peak_of.values()), default=0))} MiB")  # fmt: skip
    return code


def run_multiple(multiple: float, root: Path, delay: float, concurrency: int) -> Result:
    import psutil

    work = root / f"N{multiple:g}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()
    chunks = write_bundle(multiple, work / "chunks_for_rag.txt")
    print(f"N = {multiple:g}: {chunks:,} chunks written in {time.perf_counter() - t0:.0f} s; work folder {work}")
    config = work / "config.yaml"
    env = run_env(work)
    db = work / "data" / "mama.duckdb"
    log = work / "materialize.log"
    monitors: list[TreeMonitor] = []
    load_before = load()
    from benchmarks.demo_time import serving

    with serving(__file__, "--delay", str(delay)) as (url, server_proc):
        write_config(multiple, work, url, concurrency, config)
        first = first_phase_keys(env)
        started = time.perf_counter()
        code = materialize("*generated_queries", env, log, monitors)
        if code == 0:
            rows = write_imported_run(db, work / "imported_run.parquet")
            print(f"  imported run: {rows:,} rows written after the queries (not part of any step's time)")
            code = materialize(f"not ({' or '.join(f'key:{k}' for k in first)})", env, log, monitors)
        wall = time.perf_counter() - started
        try:
            server_peak = psutil.Process(server_proc.pid).memory_info().rss
        except psutil.Error:
            server_peak = 0
    steps = step_figures(work / "dagster_home", monitors)
    step_pids = {pid for s in steps.values() for pid in s.pids}
    judge = steps.get("judged_labels", Step("judged_labels"))
    return Result(
        multiple=multiple,
        chunks=chunks,
        wall=wall,
        steps=steps,
        counts=table_counts(db),
        tree_peak=max((t for m in monitors for _, t, _ in m.samples), default=0),
        largest_peak=max((p for m in monitors for p in m.peak_of.values()), default=0),
        orchestration_peak=max(
            (p for m in monitors for pid, p in m.peak_of.items() if pid not in step_pids), default=0
        ),
        judge_calls=judge.http_calls,
        judge_client_wall=judge.client_wall,
        loads=([x for m in monitors for x in m.loads], load_before, load()),
        server_peak=server_peak,
        failed="" if code == 0 else f"mama-pipeline materialize exited {code}; see {log}",
    )


# ---- report ------------------------------------------------------------------------------------------


def mib(n: int) -> str:
    return f"{n / MIB:,.0f}"


def server_split(r: Result) -> tuple[int, float, float, int, float]:
    """A run's steps split by whether they called the test server (an LLM or the embeddings endpoint: their
    client recorded calls): (steps, wall s, the clients' wait s) that did, (steps, wall s) that did not."""
    calling = [s for s in r.steps.values() if s.http_calls]
    other = [s for s in r.steps.values() if not s.http_calls]
    return (
        len(calling),
        sum(s.wall for s in calling),
        sum(s.client_wall for s in calling),
        len(other),
        sum(s.wall for s in other),
    )


def growth(results: list[Result], ranked: list[str]) -> None:
    """Each step's wall time at the last multiple over the first (steps present in both, slowest first), and the
    same for the two sums of ``server_split``; a ratio over 0 s is printed as "-", not as a number."""
    first, last = results[0], results[-1]
    factor = last.multiple / first.multiple
    print(f"\ngrowth, N = {first.multiple:g} -> N = {last.multiple:g} (x{factor:g} the work), wall time")

    def line(label: str, a: float, b: float, note: str = "") -> None:
        ratio = f"x{b / a:5.1f}" if a > 0 else f"{'-':>6}"
        print(f"{label[:40]:<42}{a:9.1f} s {b:9.1f} s   {ratio}{note}")

    for key in ranked:
        a, b = first.steps.get(key), last.steps.get(key)
        if a is not None and b is not None:
            line(key, a.wall, b.wall, "  calls the test server" if b.http_calls else "")
    (_, w0, _, _, o0), (_, w1, _, _, o1) = server_split(first), server_split(last)
    line("steps that call the test server", w0, w1)
    line("the other steps", o0, o1)


def report(results: list[Result], delay: float, concurrency: int) -> None:
    ideal = concurrency / delay
    cols = [f"N = {r.multiple:g}" for r in results]
    print(f"\nper step (partitions summed): wall s / own process peak MiB / tree peak MiB while it ran; "
          f"LLM calls (rate inside the client, share of the ideal {ideal:.0f}/s = {concurrency} / {delay} s)")  # fmt: skip
    last = results[-1]
    ranked = sorted(last.steps, key=lambda k: -last.steps[k].wall)
    by_memory = sorted(last.steps, key=lambda k: -last.steps[k].own_peak)[:5]
    shown = [k for k in ranked if k in ranked[:SHOWN_STEPS] or k in by_memory]
    width = 36
    print(f"{'step':<36}" + "".join(f"{c:>{width}}" for c in cols))
    for key in shown:
        cells = []
        for r in results:
            s = r.steps.get(key)
            if s is None:
                cells.append(f"{'-':>{width}}")
                continue
            cell = f"{s.wall:7.1f} s {mib(s.own_peak):>6} {mib(s.tree_peak):>6}"
            rate = s.http_calls / s.client_wall if s.client_wall else 0
            cell += f" {f'{s.http_calls}@{100 * rate / ideal:.0f}%' if s.http_calls else '':>12}"
            cells.append(f"{cell:>{width}}")
        runs = max(r.steps[key].runs for r in results if key in r.steps)
        print(f"{key[:31] + (f' x{runs}' if runs > 1 else ''):<36}" + "".join(cells))
    rest = [
        f"{len(r.steps) - len(shown)} steps, {sum(s.wall for k, s in r.steps.items() if k not in shown):.1f} s"
        for r in results
    ]
    print(f"{'other steps and checks':<36}" + "".join(f"{x:>{width}}" for x in rest))
    summed = [f"{sum(s.wall for s in r.steps.values()):.1f} s" for r in results]
    print(f"{'all steps, summed':<36}" + "".join(f"{x:>{width}}" for x in summed))
    waiting = [server_split(r) for r in results]
    print(
        f"{'steps that call the test server':<36}"
        + "".join(f"{f'{n} steps, {w:.1f} s (client {c:.1f} s)':>{width}}" for n, w, c, _, _ in waiting)
    )
    print(f"{'the other steps':<36}" + "".join(f"{f'{m} steps, {o:.1f} s':>{width}}" for _, _, _, m, o in waiting))
    if len(results) > 1:
        growth(results, ranked)
    print("\ntotals")
    rows = [
        ("chunks", lambda r: f"{r.counts['corpus_chunks']:,}"),
        ("sampled chunks", lambda r: f"{r.counts['sampled_chunks']:,}"),
        ("queries", lambda r: f"{r.counts['generated_queries']:,}"),
        ("rankings rows", lambda r: f"{r.counts['rankings']:,}"),
        ("pooled pairs", lambda r: f"{r.counts['pooled_pairs']:,}"),
        ("judged pairs (judged_labels)", lambda r: f"{r.counts['judged_labels']:,}"),
        ("judgments rows", lambda r: f"{r.counts['judgments']:,}"),
        ("variant holes / label rows", lambda r: f"{r.counts['variant_holes']:,} / {r.counts['variant_labels']:,}"),
        ("audit / reference judgments", lambda r: f"{r.counts['audit_judgments']:,} / {r.counts['reference_judgments']:,}"),
        ("LLM answers cached", lambda r: f"{r.counts['llm_responses']:,}"),
        ("wall time (both invocations)", lambda r: f"{r.wall:,.0f} s = {r.wall / 60:.1f} min"),
        ("peak RSS, whole tree", lambda r: f"{mib(r.tree_peak)} MiB"),
        ("peak RSS, largest process", lambda r: f"{mib(r.largest_peak)} MiB"),
        ("peak RSS, largest non-step process", lambda r: f"{mib(r.orchestration_peak)} MiB"),
        ("peak RSS, test server (end)", lambda r: f"{mib(r.server_peak)} MiB"),
        ("judge requests/s (in client)", lambda r: (
            f"{r.judge_calls / r.judge_client_wall:.0f}/s = {100 * r.judge_calls / r.judge_client_wall / ideal:.0f}% "
            f"of {ideal:.0f}" if r.judge_client_wall else "-")),
        ("judge requests/s (step wall)", lambda r: (
            f"{r.judge_calls / r.steps['judged_labels'].wall:.0f}/s" if "judged_labels" in r.steps else "-")),
        ("load avg during (mean of 1-min)", lambda r: f"{sum(r.loads[0]) / max(len(r.loads[0]), 1):.1f}"),
        ("load avg before / after (1 min)", lambda r: f"{r.loads[1][0]:.1f} / {r.loads[2][0]:.1f}"),
    ]  # fmt: skip
    for label, fn in rows:
        print(f"{label:<34}" + "".join(f"{fn(r):>28}" for r in results))
    for r in results:
        if r.failed:
            print(f"N = {r.multiple:g}: FAILED: {r.failed}")
        top = max(r.steps.values(), key=lambda s: s.own_peak, default=None)
        tree = max(r.steps.values(), key=lambda s: s.tree_peak, default=None)
        if top:
            print(f"N = {r.multiple:g}: the largest process ran {top.key} ({mib(top.own_peak)} MiB); the tree peaked "
                  f"during {tree.key} ({mib(tree.tree_peak)} MiB)")  # fmt: skip
    if len(results) > 1:
        a, b = results[0], results[-1]
        grow = [
            (b.steps[k].wall / a.steps[k].wall, k)
            for k in a.steps.keys() & b.steps.keys()
            if a.steps[k].wall > 0.5 and b.steps[k].wall >= 5
        ]
        mem = [
            (b.steps[k].own_peak / a.steps[k].own_peak, k)
            for k in a.steps.keys() & b.steps.keys()
            if a.steps[k].own_peak
        ]
        ratio = b.multiple / a.multiple
        for what, found in (("wall time", grow), ("own process peak", mem)):
            if found:
                g, k = max(found)
                print(f"fastest growing {what}, N = {a.multiple:g} -> {b.multiple:g} (x{ratio:g}): {k}, x{g:.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--multiple", type=float, nargs="+", default=[0.1, 1.0], help="multiples of the paper, in order")
    ap.add_argument("--root", default="/tmp/paper-multiple", help="one work folder per multiple goes here")
    ap.add_argument("--delay", type=float, default=0.05, help="the test server's answer time, seconds")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight per LLM stage")
    ap.add_argument("--report-only", action="store_true", help="print the figures saved by an earlier run in --root")
    ap.add_argument("--rerun", metavar="SELECTION", help="materialise these assets again on the finished run of the "
                    "one --multiple, each step beside its full-run figures")  # fmt: skip
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # internal: run the test server on this port
    args = ap.parse_args()
    if args.serve:
        import uvicorn

        uvicorn.run(gated_echo(args.delay), host="127.0.0.1", port=args.serve, log_level="warning", access_log=False)
        return 0
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    if args.rerun:
        if len(args.multiple) != 1:
            ap.error("--rerun takes one --multiple")
        return 1 if rerun_steps(args.multiple[0], root, args.rerun, args.delay, args.concurrency) else 0
    results = []
    for multiple in args.multiple:
        saved = root / f"N{multiple:g}" / "result.pickle"
        if args.report_only:
            results.append(pickle.loads(saved.read_bytes()))
            continue
        results.append(run_multiple(multiple, root, args.delay, args.concurrency))
        r = results[-1]
        saved.write_bytes(pickle.dumps(r))
        print(f"  N = {multiple:g} done in {r.wall:.0f} s{' (FAILED)' if r.failed else ''}", flush=True)
    report(results, args.delay, args.concurrency)
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
