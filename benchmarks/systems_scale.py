"""Two answering systems on a mamabench-sized set against the local fake server, grading included.

Builds (seeded) a 25,949-item set with mamabench's track mix (23,241 mcq, 369 short
answer, 2,339 rubric items with 4-33 criteria, mean about 12) and a 63,650-chunk
corpus, then runs what ``system_answers`` and ``system_grades`` run, with the same
pure functions and the shared LLM client: a closed-book system and a RAG system
(real Lucene BM25, k = 5, the question or last user turn as the query), the
short-answer grader and the rubric judge, then the scoreboard and the paired
comparisons.

Phase 1 answers and grades everything; throughput is the LLM calls per second
inside the client against the ideal concurrency / answer time, and end to end
(retrieval, request building, grading, scoring included). Phase 2 re-runs
unchanged: calls made (target 0). Peak memory: this process's ru_maxrss (the fake
server runs in its own process and is not counted).

Run from the repository root:
    .venv/bin/python -m benchmarks.systems_scale [--items 25949] [--chunks 63650] [--delay 0.2] [--concurrency 64]
A smaller run keeps the track mix: ``--items 2595 --chunks 6365``.
Targets: >= 90% of ideal; 0 calls on re-run.
"""
from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from mama_pipeline.calibration.rubric_judge import RUBRIC_JUDGE_PROMPT, RubricVerdict
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.mamabench.schema import criterion_id
from mama_pipeline.retrieval.registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.settings import Bm25Retriever
from mama_pipeline.store import Store
from mama_pipeline.systems import answering, grading
from mama_pipeline.systems.comparisons import compare_systems
from mama_pipeline.systems.items import benchmark_items
from mama_pipeline.systems.prompts import SHORT_ANSWER_GRADER_PROMPT, ShortAnswerGrade
from mama_pipeline.systems.scoreboard import scoreboard
from mama_pipeline.systems.settings import SystemSettings
from mama_pipeline_tests.fake_llm_server import running_server

MIX = {"mcq": 23241, "short_answer": 369, "rubric": 2339}  # mamabench v0.2, 25,949 items
CATEGORIES = ["MATERNAL", "NEONATAL", "CHILD_HEALTH", "SEXUAL_AND_REPRODUCTIVE_HEALTH"]


def log(msg: str) -> None:
    print(msg, flush=True)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_data(n_items: int, n_chunks: int, seed: int = 20251201) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20000)] + ["oxytocin", "eclampsia", "newborn", "bleeding", "dose"])
    lengths = np.clip(rng.lognormal(np.log(120), 0.5, n_chunks), 20, 400).astype(int)
    words = vocab[(rng.zipf(1.15, size=int(lengths.sum())) - 1) % len(vocab)]
    texts, start = [], 0
    for n in lengths:
        texts.append(" ".join(words[start:start + n].tolist()))
        start += n
    import hashlib

    chunks = pl.DataFrame({"chunk_id": [hashlib.sha256(f"{i}:{t}".encode()).hexdigest()[:16] for i, t in enumerate(texts)],
                           "text": texts, "corpus_version": "bench-v1"})
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
                set_type, pool = "open_ended_rubric", ("healthbench_oss_eval", "healthbench_consensus",
                                                       "healthbench_hard")[i % 3]
            rows.append({"item_id": item_id, "pool": pool, "set_type": set_type, "category": category,
                         "item_json": json.dumps({"id": item_id, "set_type": set_type, **item})})
    criteria_frame = pl.DataFrame({"criterion_id": list(criteria), "criterion": list(criteria.values())})
    return benchmark_items(pl.DataFrame(rows)), chunks, criteria_frame


def run_system(cfg: SystemSettings, items, chunks, criteria, store: Store, work: Path, clients: dict) -> dict:
    t0 = time.perf_counter()
    contexts = pl.DataFrame(schema=answering.CONTEXT_SCHEMA)
    retrieval_s = 0.0
    if cfg.mode == "rag":
        spec = Bm25Retriever(name="bm25", kind="bm25")
        env = RetrievalEnv(store=store, work_dir=work / "retrieval", resolve=Path, load_rankings=lambda n: None,
                           log=lambda m: None)
        out = run_retriever(spec, chunks, answering.retrieval_queries(items), cfg.k, env)
        contexts = answering.contexts_from_rankings(out.rankings, chunks, cfg.k)
        retrieval_s = time.perf_counter() - t0
    client = clients[cfg.name]
    frames, llm_s, calls, by_step = [], 0.0, 0, {}
    for track in cfg.tracks:
        template, model, requests, given = answering.track_requests(cfg, track, items, contexts)
        rep = client.run(template, model, requests)
        llm_s += rep.wall_s
        calls += rep.calls
        by_step[f"answers/{track}"] = rep.calls
        frames.append(answering.answer_rows(cfg.name, track, template, rep, given))
    answers = pl.concat(frames)
    rows = grading.mcq_grades(answers, items, cfg.mcq_output)
    rep = clients["answer_grader"].run(SHORT_ANSWER_GRADER_PROMPT, ShortAnswerGrade,
                                       grading.short_answer_requests(answers, items))
    llm_s += rep.wall_s
    calls += rep.calls
    by_step["grades/short_answer"] = rep.calls
    rows += grading.short_answer_grades(answers, items, rep)
    rep = clients["rubric_judge"].run(RUBRIC_JUDGE_PROMPT, RubricVerdict, grading.rubric_requests(answers, items, criteria))
    llm_s += rep.wall_s
    calls += rep.calls
    by_step["grades/rubric"] = rep.calls
    rows += grading.rubric_grades(answers, items, criteria, rep)
    grades = grading.grades_frame(rows, "exclude")
    return {"grades": grades, "answers": answers, "wall_s": time.perf_counter() - t0, "llm_s": llm_s,
            "calls": calls, "by_step": by_step, "retrieval_s": retrieval_s}


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
    log(f"data: {items.height} items {dict(items.group_by('track').len().iter_rows())}, {n_criteria} rubric "
        f"criteria, {chunks.height} chunks ({time.perf_counter() - t0:.1f} s)")
    systems = [SystemSettings(name="closed", model="fake-a"),
               SystemSettings(name="rag", model="fake-a", mode="rag", retriever="bm25", k=5, baseline="closed")]
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        work = Path(tmp)
        store = Store(work / "bench.duckdb")

        def client(stage: str, model: str) -> LLMClient:
            cfg = StageSettings(base_urls=[server.url], model=model, concurrency=args.concurrency)
            return LLMClient(stage, cfg, store, endpoint=server.url, model=model, resolve_urls=lambda: [server.url])

        clients = {s.name: client(f"system:{s.name}", s.model) for s in systems}
        clients.update(answer_grader=client("answer_grader", "fake-grader"), rubric_judge=client("rubric_judge", "fake-judge"))
        ideal = args.concurrency / args.delay
        for phase in ("phase 1 (fresh)", "phase 2 (re-run, nothing changed)"):
            before = server.stats()["chat_calls"]
            t1 = time.perf_counter()
            runs = {s.name: run_system(s, items, chunks, criteria, store, work, clients) for s in systems}
            grades = pl.concat([r["grades"] for r in runs.values()])
            t2 = time.perf_counter()
            board = scoreboard(grades, None, args.resamples, 0, 0.95)
            comparisons = compare_systems(grades, {"rag": "closed"}, args.resamples, 0, 0.95)
            score_s = time.perf_counter() - t2
            wall = time.perf_counter() - t1
            calls = server.stats()["chat_calls"] - before
            llm_s = sum(r["llm_s"] for r in runs.values())
            log(f"{phase}: {calls} calls to the server")
            for name, r in runs.items():
                failed = r["grades"].filter(pl.col("status") != "graded").height
                log(f"  {name}: {r['calls']} calls, wall {r['wall_s']:.1f} s (retrieval {r['retrieval_s']:.1f} s, "
                    f"inside the client {r['llm_s']:.1f} s), {failed} not graded; calls by step {r['by_step']}")
            if calls:
                log(f"  inside the client: {calls / llm_s:.1f} calls/s, ideal {ideal:.0f}/s -> "
                    f"{100 * calls / llm_s / ideal:.1f}% of ideal")
                log(f"  end to end (retrieval, requests, grading, scoreboard, tests): {calls / wall:.1f} calls/s -> "
                    f"{100 * calls / wall / ideal:.1f}% of ideal; wall {wall:.1f} s")
            log(f"  scoreboard ({board.height} rows) and comparisons ({comparisons.height} rows): {score_s:.1f} s; "
                f"peak RSS so far {peak_mib():.0f} MiB")
        overall = board.filter(pl.col("segment_kind") == "all").select("system", "track", "n_scored", "mean")
        log(str(overall))
    log(f"peak RSS {peak_mib():.0f} MiB (this process; the fake server is a separate process)")


if __name__ == "__main__":
    main()
