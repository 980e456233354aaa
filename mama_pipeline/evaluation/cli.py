"""``mama-pipeline eval``: score runs, evaluate retrievers on BEIR benchmarks, audit, export.

  mama-pipeline eval trec   --run RUN [--run RUN ...] --qrels QRELS    score TREC runs (every qrels query counts, as trec_eval -c)
  mama-pipeline eval beir   --benchmark DIR|PRESET|HUB_ID --retriever NAME [...]   run registry retrievers on a BEIR benchmark
  mama-pipeline eval audit  --benchmark DIR|PRESET|HUB_ID [--retriever NAME | --model PATH]   leak and truncation audits
  mama-pipeline eval export --out DIR                                   mamaretrieval tables -> BEIR layout + TREC qrels and runs

Retrievers are the entries of ``retrieval.retrievers`` in the configuration file
(``--config``, else ``MAMA_CONFIG``, else the bundled sample).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import polars as pl

from mama_pipeline.common.input_errors import run_cli

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_cli("mama-pipeline eval", lambda: args.func(args), also=(ValueError, KeyError))


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="mama-pipeline eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("trec", help="score TREC run files against a TREC qrels file")
    t.add_argument("--run", action="append", required=True, help="run file (repeatable); name = file stem")
    t.add_argument("--qrels", required=True)
    t.add_argument("--cuts", default="relevant=1", help="relevance cuts NAME=MIN,... (e.g. lenient=3,strict=5)")
    t.add_argument("--max-grade", type=int, help="top label: adds wHR@k and wP@k")
    _common(t)
    t.set_defaults(func=cmd_trec)

    b = sub.add_parser("beir", help="evaluate configured retrievers on a BEIR benchmark")
    _benchmark_args(b)
    b.add_argument("--retriever", action="append", required=True, help="retrieval.retrievers name (repeatable)")
    b.add_argument(
        "--segment-field",
        action="append",
        default=None,
        help="query metadata key to break results down by (repeatable)",
    )
    _common(b)
    b.set_defaults(func=cmd_beir)

    a = sub.add_parser("audit", help="leak audit and truncation audit of a BEIR benchmark")
    _benchmark_args(a)
    a.add_argument("--retriever", action="append", default=[], help="dense or sparse retriever whose tokenizer counts")
    a.add_argument("--model", action="append", default=[], help="sentence-transformers model folder")
    a.add_argument("--config")
    a.set_defaults(func=cmd_audit)

    e = sub.add_parser("export", help="export the mamaretrieval tables of the store")
    e.add_argument("--out", required=True)
    e.add_argument("--config")
    e.set_defaults(func=cmd_export)
    return ap


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cutoffs", default=None, help="comma-separated k values")
    p.add_argument("--significance", action="append", default=None, help="measure for paired tests (repeatable)")
    p.add_argument("--resamples", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="folder for scoreboard.tsv, significance.tsv, per-query files and the report")
    p.add_argument("--config")


def _benchmark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmark", required=True, help="BEIR folder, preset name (miriad-200k) or hub dataset id")
    p.add_argument("--revision", help="hub commit sha (hub datasets and presets)")
    p.add_argument("--split", default=None)
    p.add_argument("--max-queries", type=int, default=None)


def cmd_trec(args) -> int:
    from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
    from mama_pipeline.evaluation._scoreboard_measures import MeasurePlan, zero_one_measures
    from mama_pipeline.evaluation._significance import pairwise_significance
    from mama_pipeline.evaluation._trec import read_trec_qrels, read_trec_run

    qrels = read_trec_qrels(args.qrels)
    runs = [read_trec_run(path, Path(path).name.split(".")[0]) for path in args.run]
    run = pl.concat(runs)
    names = list(dict.fromkeys(run["retriever"].to_list()))
    cuts = tuple((name, int(rel)) for name, rel in (c.split("=") for c in args.cuts.split(",")))
    plan = MeasurePlan(
        _cutoffs(args.cutoffs, [1, 3, 5, 10, 20]),
        tuple((n if len(cuts) > 1 else "", r) for n, r in cuts),
        args.max_grade,
    )
    query_ids = qrels["query_id"].unique(maintain_order=True).to_list()
    evaluation = evaluate(run.drop("score"), qrels, query_ids, plan, names, ",".join(args.run), args.qrels)
    board = scoreboard(evaluation, qrels)
    measures = args.significance or [plan.measures()[0].name]
    sig = pairwise_significance(
        evaluation.per_query,
        measures,
        names,
        n_resamples=args.resamples,
        seed=args.seed,
        binary_measures=zero_one_measures(measures),
    )
    _emit(board, sig, evaluation, {"dropped": evaluation.dropped}, args.out, "trec", run=run, qrels=qrels)
    return 0


def cmd_beir(args) -> int:
    from mama_pipeline.evaluation._beir_evaluation import (
        beir_report_inputs,
        evaluate_beir,
        load_benchmark,
        registry_inputs,
        run_registry,
    )
    from mama_pipeline.evaluation._segments import beir_segments
    from mama_pipeline.retrieval import retrieval_env
    from mama_pipeline.settings import load_settings
    from mama_pipeline.store import Store

    settings = load_settings(args.config)
    cfg = _benchmark_settings(args, args.retriever)
    loaded = load_benchmark(cfg, settings.resolve)
    chunks, queries = registry_inputs(loaded.benchmark)
    store = Store(settings.db_path)

    def env(load_rankings):
        return retrieval_env(settings, store, lambda m: print(m, file=sys.stderr), load_rankings)

    ranked, meta = run_registry(cfg.retrievers, chunks, queries, max(cfg.cutoffs), settings.retrieval, env)
    result = evaluate_beir(loaded, ranked, cfg, meta, args.resamples, args.seed)
    notes = {**result.notes, "leak_audit": result.leak, "truncation": result.truncation.to_dicts()}
    segment_settings = settings.evaluation.segments.model_copy(update={"resamples": args.resamples})
    evaluation_settings = settings.evaluation.model_copy(update={"seed": args.seed, "segments": segment_settings})
    segments = beir_segments(loaded.benchmark, result.evaluation, cfg, evaluation_settings)
    report = beir_report_inputs(result, cfg, meta, args.resamples, args.seed)
    report.segment_tests = segments
    _emit(
        result.board,
        result.significance,
        result.evaluation,
        notes,
        args.out,
        cfg.name,
        run=result.run,
        qrels=result.qrels,
        report=report,
        segments=segments,
    )
    return 0


def cmd_audit(args) -> int:
    from mama_pipeline.evaluation._audits import encoder_token_counter, leak_audit, truncation_audit
    from mama_pipeline.evaluation._beir_evaluation import load_benchmark, registry_inputs
    from mama_pipeline.retrieval import DenseParams, DenseRetriever
    from mama_pipeline.settings import load_settings

    settings = load_settings(args.config)
    cfg = _benchmark_settings(args, ["audit"])
    loaded = load_benchmark(cfg, settings.resolve)
    bench = loaded.benchmark
    leak, leaked = leak_audit(bench.queries, bench.corpus, bench.qrels)
    out = {
        **loaded.provenance,
        "leak_audit": {**leak, "leaked_query_ids": leaked["query_id"].unique(maintain_order=True).to_list()[:20]},
        "truncation": [],
    }
    specs = [settings.retrieval.retriever(n) for n in args.retriever]
    specs += [DenseRetriever(name="model", kind="dense", params=DenseParams(model_path=m)) for m in args.model]
    texts = registry_inputs(bench)[0]["text"].to_list()
    for spec in specs:
        count, max_length, label = encoder_token_counter(spec, settings.resolve)
        out["truncation"].append({"retriever": spec.name, **truncation_audit(texts, count, max_length, label)})
    print(json.dumps(out, indent=2, sort_keys=True, default=str))
    return 0


def cmd_export(args) -> int:
    from mama_pipeline.evaluation._mamaretrieval_export import export_mamaretrieval
    from mama_pipeline.settings import load_settings
    from mama_pipeline.store import Store

    settings = load_settings(args.config)
    out = Path(args.out)
    summary = export_mamaretrieval(Store(settings.db_path), settings.evaluation, out)
    print(json.dumps({"out": str(out), **summary, "per_query": str(out / "per_query")}, indent=2, sort_keys=True))
    return 0


def _benchmark_settings(args, retrievers: list[str]):
    from mama_pipeline.evaluation._beir import PRESETS
    from mama_pipeline.evaluation.settings import BeirBenchmarkSettings

    source: dict[str, str] = {}
    if args.benchmark in PRESETS and not Path(args.benchmark).exists():
        source["preset"] = args.benchmark
    elif Path(args.benchmark).exists() or not HUB_ID.match(args.benchmark):  # a folder, or a missing one
        source["path"] = str(Path(args.benchmark).expanduser().resolve())
    else:
        source["repo_id"] = args.benchmark
    name = re.sub(r"[^a-z0-9_.-]+", "-", Path(args.benchmark).name.lower()).strip("-.") or "benchmark"
    extra = {}
    if getattr(args, "cutoffs", None):
        extra["cutoffs"] = _cutoffs(args.cutoffs, [])
    if getattr(args, "significance", None):
        extra["significance_measures"] = args.significance
    if getattr(args, "segment_field", None):
        extra["segment_fields"] = args.segment_field
    return BeirBenchmarkSettings(
        name=name,
        revision=args.revision,
        split=args.split,
        max_queries=args.max_queries,
        retrievers=retrievers,
        **source,
        **extra,
    )


def _cutoffs(text: str | None, default: list[int]) -> tuple[int, ...]:
    return tuple(int(k) for k in text.split(",")) if text else tuple(default)


def _emit(
    board: pl.DataFrame,
    sig: pl.DataFrame,
    evaluation,
    notes: dict,
    out: str | None,
    name: str,
    run: pl.DataFrame | None = None,
    qrels: pl.DataFrame | None = None,
    report=None,
    segments=None,
) -> None:
    """Print the scoreboard and notes; with ``out``, write the tables, per-query files and the HTML report
    (``report``: its inputs; default: scoreboard, significance and the notes as facts)."""
    from mama_pipeline.evaluation._per_query_scoring import wide_scoreboard

    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_rows=-1,
        tbl_cols=-1,
        float_precision=4,
        tbl_width_chars=10_000,
    ):
        print(wide_scoreboard(board))
        if sig.height:
            print(
                sig.select(
                    "measure",
                    "retriever_a",
                    "retriever_b",
                    "diff",
                    "ci_low",
                    "ci_high",
                    "p_randomization_holm",
                    "p_mcnemar_holm",
                    "refused",
                )
            )
    print(json.dumps(notes, indent=2, sort_keys=True, default=str))
    if out:
        from mama_pipeline.common.file_ops import atomic_file
        from mama_pipeline.evaluation._per_query_files import write_per_query_files
        from mama_pipeline.evaluation._retrieval_page import ReportInputs, write_report

        folder = Path(out)
        with atomic_file(folder / "scoreboard.tsv") as fh:
            board.write_csv(fh, separator="\t")
        with atomic_file(folder / "significance.tsv") as fh:
            sig.write_csv(fh, separator="\t")
        if segments is not None:
            with atomic_file(folder / "segment_scoreboard.tsv") as fh:
                segments.board.write_csv(fh, separator="\t")
            with atomic_file(folder / "segment_significance.tsv") as fh:
                segments.significance.write_csv(fh, separator="\t")
        write_per_query_files(
            evaluation.per_query,
            evaluation.retrievers,
            evaluation.measures,
            evaluation.query_ids,
            folder / "per_query",
            name,
            run=run,
            qrels=qrels,
        )
        if report is None:
            headline = sig["measure"][0] if sig.height else evaluation.measures[0].name
            facts = [(key, _fact(value)) for key, value in sorted(notes.items())]
            report = ReportInputs(
                title=f"{name} scoreboard",
                board=board,
                significance=sig,
                headline=headline,
                header=facts,
                per_query=evaluation.per_query,
            )
        page = write_report(report, folder / "report")
        print(f"written: {folder}/scoreboard.tsv, significance.tsv, per_query/, {page}")


def _fact(value) -> str:
    """A note's value as words: ``k: v; k: v`` for mappings, never JSON."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_fact(v)}" for k, v in sorted(value.items())) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fact(v) for v in value) or "none"
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
