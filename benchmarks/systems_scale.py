"""Two answering systems on a mamabench-sized set against the local fake server, grading included.

Builds (seeded) a 25,949-item set with mamabench's track mix (23,241 mcq, 369 short
answer, 2,339 rubric items with 4-33 criteria, mean about 12) and a 63,650-chunk
corpus, then runs what ``system_answers`` and ``system_grades`` run, with the same
pure functions and the shared LLM client: a closed-book system and a RAG system
(real Lucene BM25, k = 5, the question or last user turn as the query), the
short-answer grader and the rubric judge, then the scoreboard and the paired
comparisons.

As Dagster runs the two ``system_answers`` partitions in their own processes, the
RAG system's retrieval runs in a second process (at lower CPU priority, so that it
does not hold up the requests in flight) while the closed-book system is asked; the
endpoint still sees one client run at a time (at most ``concurrency`` requests in
flight), so the ideal is calls x answer time / concurrency. The scoreboard and the
comparisons, two assets and so two steps, also run side by side in the two processes.

Phase 1 answers and grades everything; throughput is the LLM calls per second
inside the client against the ideal concurrency / answer time, and end to end
(retrieval, request building, grading, scoring included). Phase 2 re-runs
unchanged: calls made (target 0). CPU per call is given for this process and for
the fake server's. Peak memory: ru_maxrss of this process, of the second
process and of the fake server (VmHWM).

Run from the repository root:
    .venv/bin/python -u -m benchmarks.systems_scale [--items 25949] [--chunks 63650] [--delay 0.2] [--concurrency 64]
A smaller run keeps the track mix: ``--items 2595 --chunks 6365``.
Targets: >= 90% of ideal; 0 calls on re-run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from mama_pipeline.calibration._rubric_judge import RUBRIC_JUDGE_PROMPT, RubricVerdict
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.mamabench._schema import criterion_id
from mama_pipeline.retrieval._kinds.bm25_kind import Bm25Retriever
from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.store import Store
from mama_pipeline.systems import _answering as answering
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._items import benchmark_items
from mama_pipeline.systems._systems_prompts import SHORT_ANSWER_GRADER_PROMPT, ShortAnswerGrade
from mama_pipeline.systems._systems_scoreboard import scoreboard
from mama_pipeline.systems.settings import SystemSettings
from mama_pipeline_tests.support.fake_llm_server import ServerHandle, running_server

MIX = {"mcq": 23241, "short_answer": 369, "rubric": 2339}  # mamabench v0.2, 25,949 items
CATEGORIES = ["MATERNAL", "NEONATAL", "CHILD_HEALTH", "SEXUAL_AND_REPRODUCTIVE_HEALTH"]


def log(msg: str) -> None:
    print(msg, flush=True)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def server_usage(server: ServerHandle) -> tuple[float, float]:
    """(CPU seconds, peak MiB) of the fake server's process."""
    pid = server._proc.pid
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM:")
    )
    return cpu, hwm / 1024


def make_data(n_items: int, n_chunks: int, seed: int = 20251201) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20000)] + ["oxytocin", "eclampsia", "newborn", "bleeding", "dose"])
    lengths = np.clip(rng.lognormal(np.log(120), 0.5, n_chunks), 20, 400).astype(int)
    words = vocab[(rng.zipf(1.15, size=int(lengths.sum())) - 1) % len(vocab)]
    texts, start = [], 0
    for n in lengths:
        texts.append(" ".join(words[start : start + n].tolist()))
        start += n
    import hashlib

    chunks = pl.DataFrame(
        {
            "chunk_id": [hashlib.sha256(f"{i}:{t}".encode()).hexdigest()[:16] for i, t in enumerate(texts)],
            "text": texts,
            "corpus_version": "bench-v1",
        }
    )
    total = sum(MIX.values())
    counts = {t: max(1, round(n * n_items / total)) for t, n in MIX.items()}

    def question() -> str:
        return " ".join(rng.choice(vocab[:3000], size=int(rng.integers(8, 20))).tolist()) + "?"

    rows, criteria = [], {}
    for track, n in counts.items():
        for i in range(n):
            item_id = f"{track}-{i:05d}"
            category = None if track == "mcq" and i % 4 else CATEGORIES[i % 4]
            if track == "mcq":
                choices = [f"option {j} {question()}" for j in range(4 + i % 2)]
                k = int(rng.integers(len(choices)))
                item = {"question": question(), "choices": choices, "answer_index": k, "answer": choices[k]}
                set_type, pool = "mcq", ("medmcqa", "medqa_usmle", "afrimedqa_mcq")[i % 3]
            elif track == "short_answer":
                item = {"question": question(), "answer": question()}
                set_type, pool = "open_ended", ("kenya_vignettes", "afrimedqa_saq", "whb")[i % 3]
            else:
                n_criteria = int(np.clip(rng.poisson(12), 4, 33))
                refs = []
                for j in range(n_criteria):
                    text = f"criterion {i}-{j}: {question()}"
                    cid = criterion_id(text, [])
                    criteria[cid] = text
                    refs.append({"criterion_id": cid, "points": int(rng.choice([-5, -2, 1, 3, 5, 7]))})
                if all(r["points"] < 0 for r in refs):
                    refs[0]["points"] = 5
                item = {"question": [{"role": "user", "content": question()}], "rubrics": refs}
                set_type, pool = (
                    "open_ended_rubric",
                    ("healthbench_oss_eval", "healthbench_consensus", "healthbench_hard")[i % 3],
                )
            rows.append(
                {
                    "item_id": item_id,
                    "pool": pool,
                    "set_type": set_type,
                    "category": category,
                    "item_json": json.dumps({"id": item_id, "set_type": set_type, **item}),
                }
            )
    criteria_frame = pl.DataFrame({"criterion_id": list(criteria), "criterion": list(criteria.values())})
    return benchmark_items(pl.DataFrame(rows)), chunks, criteria_frame


def rag_rankings(chunks_path: str, queries: pl.DataFrame, k: int, work: str) -> tuple[pl.DataFrame, float, float]:
    """In the retrieval process: BM25 top ``k`` per item, with the seconds it took and the process's peak MiB."""
    t0 = time.perf_counter()
    env = RetrievalEnv(
        store=Store(Path(work) / "retrieval.duckdb"),
        work_dir=Path(work) / "retrieval",
        resolve=Path,
        load_rankings=lambda names, ids: None,
        log=lambda m: None,
    )
    out = run_retriever(Bm25Retriever(name="bm25", kind="bm25"), pl.read_parquet(chunks_path), queries, k, env)
    return out.rankings, time.perf_counter() - t0, peak_mib()


def run_system(
    cfg: SystemSettings, items, chunks, criteria, store: Store, clients: dict, rankings: Future | None
) -> dict:
    t0 = time.perf_counter()
    contexts = pl.DataFrame(schema=answering.CONTEXT_SCHEMA)
    retrieval = {}
    if cfg.mode == "rag":
        waited = time.perf_counter()
        ranked, retrieval_s, worker_peak = rankings.result()
        contexts = answering.contexts_from_rankings(ranked, chunks, cfg.k)
        retrieval = {"retrieval_s": retrieval_s, "waited_s": time.perf_counter() - waited, "worker_peak": worker_peak}
    client = clients[cfg.name]
    frames, by_step = [], {}
    llm = {"wall": 0.0, "cpu": 0.0, "calls": 0}

    def ask(c: LLMClient, step: str, template, model, requests):
        w, u = time.perf_counter(), cpu_s()
        rep = c.run(template, model, requests)
        llm["wall"] += time.perf_counter() - w
        llm["cpu"] += cpu_s() - u
        llm["calls"] += rep.calls
        by_step[step] = rep.calls
        return rep

    for track in cfg.tracks:
        template, model, requests, given = answering.track_requests(cfg, track, items, contexts)
        rep = ask(client, f"answers/{track}", template, model, requests)
        frames.append(answering.answer_rows(cfg.name, track, template, rep, given))
    answers = pl.concat(frames)
    rows = grading.mcq_grades(answers, items, cfg.mcq_output)
    rep = ask(
        clients["answer_grader"],
        "grades/short_answer",
        SHORT_ANSWER_GRADER_PROMPT,
        ShortAnswerGrade,
        grading.short_answer_requests(answers, items),
    )
    rows += grading.short_answer_grades(answers, items, rep)
    rep = ask(
        clients["rubric_judge"],
        "grades/rubric",
        RUBRIC_JUDGE_PROMPT,
        RubricVerdict,
        grading.rubric_requests(answers, items, criteria),
    )
    rows += grading.rubric_grades(answers, items, criteria, rep)
    grades = grading.grades_frame(rows, "exclude")
    return {
        "grades": grades,
        "answers": answers,
        "wall_s": time.perf_counter() - t0,
        "llm": llm,
        "by_step": by_step,
        **retrieval,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=sum(MIX.values()))
    ap.add_argument("--chunks", type=int, default=63650)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()

    t0 = time.perf_counter()
    items, chunks, criteria = make_data(args.items, args.chunks)
    n_criteria = int(items.filter(pl.col("track") == "rubric")["n_criteria"].sum())
    log(
        f"data: {items.height} items {dict(items.group_by('track').len().iter_rows())}, {n_criteria} rubric "
        f"criteria, {chunks.height} chunks ({time.perf_counter() - t0:.1f} s)"
    )
    systems = [
        SystemSettings(name="closed", model="fake-a"),
        SystemSettings(name="rag", model="fake-a", mode="rag", retriever="bm25", k=5, baseline="closed"),
    ]
    spawn = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_server(delay=args.delay) as server,
        ProcessPoolExecutor(1, mp_context=spawn, initializer=os.nice, initargs=(10,)) as second_process,
    ):
        work = Path(tmp)
        store = Store(work / "bench.duckdb")
        chunks.write_parquet(work / "chunks.parquet")
        queries = answering.retrieval_queries(items)

        def client(stage: str, model: str) -> LLMClient:
            cfg = StageSettings(base_urls=[server.url], model=model, concurrency=args.concurrency)
            return LLMClient(stage, cfg, store, endpoint=server.url, model=model, resolve_urls=lambda: [server.url])

        clients = {s.name: client(f"system:{s.name}", s.model) for s in systems}
        clients.update(
            answer_grader=client("answer_grader", "fake-grader"), rubric_judge=client("rubric_judge", "fake-judge")
        )
        ideal = args.concurrency / args.delay
        figures = {}
        worker_peak = 0.0
        for phase in ("phase 1 (fresh)", "phase 2 (re-run, nothing changed)"):
            before = server.stats()["chat_calls"]
            server_cpu0, cpu0 = server_usage(server)[0], cpu_s()
            t1 = time.perf_counter()
            # the RAG system's retrieval, in its own (lower-priority) process while the closed-book system is asked
            rankings = second_process.submit(
                rag_rankings, str(work / "chunks.parquet"), queries, next(s.k for s in systems if s.mode == "rag"), tmp
            )
            runs = {s.name: run_system(s, items, chunks, criteria, store, clients, rankings) for s in systems}
            grades = pl.concat([r["grades"] for r in runs.values()])
            t2 = time.perf_counter()
            # two assets, two steps: the scoreboard in the second process while the comparisons run here
            board_future = second_process.submit(scoreboard, grades, None, args.resamples, 0, 0.95)
            comparisons = compare_systems(grades, {"rag": "closed"}, args.resamples, 0, 0.95)
            board = board_future.result()
            score_s = time.perf_counter() - t2
            wall = time.perf_counter() - t1
            calls = server.stats()["chat_calls"] - before
            server_cpu = server_usage(server)[0] - server_cpu0
            cpu = cpu_s() - cpu0
            llm_wall = sum(r["llm"]["wall"] for r in runs.values())
            llm_cpu = sum(r["llm"]["cpu"] for r in runs.values())
            log(f"{phase}: {calls} calls to the server")
            for name, r in runs.items():
                failed = r["grades"].filter(pl.col("status") != "graded").height
                rag = ""
                if "retrieval_s" in r:
                    worker_peak = max(worker_peak, r["worker_peak"])
                    rag = f"retrieval {r['retrieval_s']:.1f} s in its own process, waited for {r['waited_s']:.1f} s; "
                log(
                    f"  {name}: {r['llm']['calls']} calls, wall {r['wall_s']:.1f} s ({rag}inside the client "
                    f"{r['llm']['wall']:.1f} s), {failed} not graded; calls by step {r['by_step']}"
                )
            log(f"  scoreboard ({board.height} rows) and comparisons ({comparisons.height} rows): {score_s:.1f} s")
            figures[phase] = {
                "calls": calls,
                "llm_wall": llm_wall,
                "wall": wall,
                "llm_cpu": llm_cpu,
                "cpu": cpu,
                "server_cpu": server_cpu,
            }
        overall = board.filter(pl.col("segment_kind") == "all").select("system", "track", "n_scored", "mean")
        log(str(overall))
        server_peak = server_usage(server)[1]
        worker_peak = max(worker_peak, second_process.submit(peak_mib).result())
    fresh, rerun = figures["phase 1 (fresh)"], figures["phase 2 (re-run, nothing changed)"]
    n = max(fresh["calls"], 1)
    ideal_s = fresh["calls"] / ideal
    log(
        f"summary ({args.items} items, {args.chunks} chunks, {args.delay * 1000:.0f} ms answers, concurrency "
        f"{args.concurrency}; ideal {ideal:.0f} calls/s, {ideal_s:.1f} s for {fresh['calls']} calls):"
    )
    log(
        f"  share of ideal: inside the client {100 * ideal_s / fresh['llm_wall']:.1f}% ({fresh['llm_wall']:.1f} s) | "
        f"end to end {100 * ideal_s / fresh['wall']:.1f}% ({fresh['wall']:.1f} s) | target 90%"
    )
    log(
        f"  CPU per call: client {1000 * fresh['llm_cpu'] / n:.2f} ms inside the client runs, "
        f"{1000 * fresh['cpu'] / n:.2f} ms for this whole process | fake server {1000 * fresh['server_cpu'] / n:.2f} ms"
    )
    log(f"  calls on the re-run: {rerun['calls']} (target 0); re-run wall {rerun['wall']:.1f} s")
    log(
        f"  peak memory: this process {peak_mib():.0f} MiB | second process (retrieval, scoreboard) {worker_peak:.0f} MiB | "
        f"fake server {server_peak:.0f} MiB"
    )


if __name__ == "__main__":
    main()
