"""Command line: ``mama-pipeline demo|materialize|plan|doctor|submit|eval|verify``.

``materialize`` runs what changed in an asset selection (``--all``: all of it) on the project's instance, one
run per partitions definition and partition key, in dependency order: with ``dagster asset
materialize`` (multiprocess executor) or, with ``--executor in_process``, all in
this process; a failed run stops only what depends on it. ``demo`` does the latter for every asset on the demo
configuration.
``--executor dask`` runs every step on the ``dask.distributed`` cluster named by
``--run-config`` (docs/scale-out.md).
``plan`` prints, sending and writing nothing, each of a selection's LLM stages' bound (from the configuration
and the raw inputs, timed with ``--rate`` and ``--gpus-per-server``) and, once its inputs are in the store, what
it would send.
``doctor`` checks a configuration before a run: one request per endpoint, the input files, the settings
across sections and the data folder's room, one line each (``preflight/``).
``submit`` checks a run file or an answers file, stores it as a submission (a dynamic partition) and scores it.
``eval`` and ``verify`` pass their remaining arguments to the evaluation and release
command lines.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mama_pipeline.common.dagster_home import dagster_home
from mama_pipeline.common.input_errors import EXIT_BAD_INPUT, run_cli
from mama_pipeline.common.project_files import project_file
from mama_pipeline.settings import load_settings

MODULE = "mama_pipeline.definitions"
DEMO_CONFIG = Path(__file__).resolve().parent / "demo_config.yaml"
RUN_CONFIG = project_file("config", "materialize-run-config.yaml")  # forkserver starts
DASK_MODULE = "mama_pipeline.scale_out.dask_definitions"


def materialize(
    select: str,
    executor: str = "multiprocess",
    run_config: str | None = None,
    everything: bool = False,
    retry_parse_failed: bool = False,
) -> int:
    """Materialise what changed in the selection (``everything``: all of it); a failed run stops only the runs'
    assets that depend on it, the others go on; returns 0 when every run succeeded, else non-zero.

    What runs is planned in this process first (``run_plan.changed_steps``: the inputs are observed and only
    asset partitions that are new, stale, owed LLM answers or downstream of one of those run); with nothing
    changed no run is launched.
    ``in_process``: every run in this process (one line per step, events to a log file, a summary).
    ``multiprocess``: each run launched from this process as ``dagster asset materialize`` would, each step in its
    own process, forked from a forkserver with the definitions preloaded (config/materialize-run-config.yaml).
    ``dask``: the same runs with the dask executor; ``run_config`` names the scheduler (docs/scale-out.md).
    """
    settings = load_settings()  # a bad configuration file is reported before anything runs
    home = dagster_home(settings.data_path)
    import dagster as dg

    from mama_pipeline.definitions import defs
    from mama_pipeline.run_plan import (
        changed_steps,
        check_inputs,
        observe_inputs,
        plan_runs,
        selected_keys,
    )

    keys = selected_keys(defs, select)
    for added, check in sorted(check_inputs(defs.resolve_asset_graph(), keys).items(), key=lambda kv: str(kv[0])):
        print(f"selection: + {added.to_user_string()} (the check {check.to_user_string()} reads it)", flush=True)
        keys.add(added)
    with dg.DagsterInstance.from_config(str(home)) as instance:  # the submissions' partitions live on it
        if everything:
            observe_inputs(defs, instance)  # the runs record the inputs they read: the next plan compares with them
            steps = plan_runs(defs.resolve_asset_graph(), keys)
        else:
            steps = changed_steps(defs, keys, instance, retry_parse_failed, say=lambda line: print(line, flush=True))
    if not steps:
        print("nothing changed since the last materialisation: no run launched (--all runs it anyway)", flush=True)
        return 0
    if executor == "in_process":
        return run_here(defs, steps, home)
    module, config = (DASK_MODULE, run_config) if executor == "dask" else (MODULE, run_config or _run_config())
    return run_commands(defs, steps, home, module, config)


def _run_config() -> str | None:
    return str(RUN_CONFIG) if RUN_CONFIG.exists() else None


def run_commands(defs, steps, home: Path, module: str, config: str | None) -> int:
    """Every run of ``steps`` on the instance at ``home``, each launched from this process on ``module``'s
    definitions with the run config file ``config``, as ``dagster asset materialize -m module -c config`` would
    launch it (the multiprocess or dask executor runs its steps in other processes), without a new interpreter
    loading the definitions for every run; a failed run stops only what depends on it, and a run's assets found
    fresh once the runs before it are done are skipped (a line each, then their count). Ends with each failed step
    and its reason and each step skipped because of one; returns 1 when a run failed or a step was skipped."""
    import datetime as dt

    import dagster as dg
    import yaml
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    from mama_pipeline.demo import (
        failed_steps_of_run,
        planned_bounds,
        planned_sent_lines,
        sent_since,
        skipped_lines,
        tag_runs,
        unchanged_count,
        unchanged_lines,
    )
    from mama_pipeline.run_plan import not_materialised_by_run, run_independent
    from mama_pipeline.settings import config_path_from_env
    from mama_pipeline.store import Store

    assets = {k.to_user_string() for step in steps for k in step.asset_keys}
    bounds, unbounded = planned_bounds(str(config_path_from_env()), assets)
    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    os.environ["DAGSTER_HOME"] = str(home)  # the step processes the executor starts find the instance by it
    recon = ReconstructableRepository.for_module(module, "defs", working_directory=os.getcwd())
    repository = recon.get_definition()
    run_config = yaml.safe_load(Path(config).read_text()) if config else None
    outcomes: list[bool] = []
    failures: list[str] = []
    skipped: list[str] = []
    unchanged: list[str] = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        total = sum(len(step.partition_keys(instance)) for step in steps)

        def run(step, partition_key) -> set:
            keys = list(step.asset_keys)
            job = repository.get_implicit_job_def_for_assets(keys)
            where = f" [{partition_key}]" if partition_key is not None else ""
            print(f"[{len(outcomes) + 1}/{total}] run {','.join(k.to_user_string() for k in keys)}{where}", flush=True)
            tags = job.get_tags_for_partition_key(partition_key, selected_asset_keys=keys) if partition_key else {}
            result = dg.execute_job(
                recon.get_reconstructable_job(job.name),
                instance,
                run_config=run_config,
                tags=tags,
                asset_selection=keys,
            )
            outcomes.append(result.success)
            if result.success:
                return set()
            lines = failed_steps_of_run(instance, result.run_id)
            for line in lines:
                print(line, flush=True)
            failures.extend(lines or [f"FAILED run {len(outcomes)} ({result.run_id}): no step failure recorded"])
            return not_materialised_by_run(instance, result.run_id, step.asset_keys)

        def on_skip(skip) -> None:
            for line in skipped_lines(skip):
                skipped.append(line)
                print(f"skipped {line}", flush=True)

        def on_unchanged(skip) -> None:
            for line in unchanged_lines(skip):
                unchanged.append(line)
                print(f"skipped {line}", flush=True)

        run_independent(defs.resolve_asset_graph(), steps, instance, run, on_skip, on_unchanged)
        sent = sent_since(Store(load_settings().db_path), started_at)
        tag_runs(instance, started_at, bounds, sent)
    for line in planned_sent_lines(bounds, unbounded, sent):
        print(line, flush=True)
    if unchanged:
        print(unchanged_count(len(unchanged)), flush=True)
    failed = outcomes.count(False)
    if failed or skipped:
        print(f"\n{failed} of {len(outcomes)} runs failed; {len(skipped)} assets skipped because of a failure:")
        for line in [*failures, *(f"SKIPPED {line}" for line in skipped)]:
            print(f"  {line}", flush=True)
    return 1 if failed or skipped else 0


def run_here(defs, keys, home: Path) -> int:
    """Run ``keys`` (None: every asset; a list: the planned runs) in this process on the instance at ``home``, then print the summary;
    returns the exit code."""
    import datetime as dt
    import time

    import dagster as dg

    from mama_pipeline.demo import (
        SummaryContext,
        area_lines,
        planned_bounds,
        planned_sent_lines,
        render,
        result_paths,
        run_in_process,
        sent_since,
        tag_runs,
        ui_command,
    )
    from mama_pipeline.llm.kept_server import kept_for_the_run
    from mama_pipeline.settings import config_path_from_env
    from mama_pipeline.store import Store
    from mama_pipeline.store.duckdb_store import hold_open

    settings = load_settings()
    os.environ["DAGSTER_HOME"] = str(home)
    log = home / "logs" / "materialize.log"
    print(f"Dagster events go to {log}", flush=True)
    graph = defs.resolve_asset_graph()
    assets = graph.materializable_asset_keys if keys is None else {k for step in keys for k in step.asset_keys}
    bounds, unbounded = planned_bounds(str(config_path_from_env()), {k.to_user_string() for k in assets})
    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    started = time.monotonic()
    with dg.DagsterInstance.get() as instance:
        # one embedded LLM server (model load, prompt cache) for every step, and one open database for every step
        # and the summary's reads of it
        with hold_open(settings.db_path):
            with kept_for_the_run():
                tally = run_in_process(defs, keys, instance, log, tags={"mama/trigger": "cli"})
            store = Store(settings.db_path)
            sent = sent_since(store, started_at)
            tag_runs(instance, started_at, bounds, sent)
            ctx = SummaryContext(settings, store, instance, graph, started_at)
            areas = area_lines(ctx)
        areas.setdefault("llm", []).extend(planned_sent_lines(bounds, unbounded, sent))
        print(
            "\n"
            + render(
                tally,
                time.monotonic() - started,
                areas,
                result_paths(settings.data_path),
                settings.db_path,
                log,
                ui_command(home, config_path_from_env()),
            ),
            flush=True,
        )
    return 1 if tally.failed else 0


def demo() -> int:
    """Materialise every asset and check on the demo configuration in this process, then summarise.

    The inputs are observed first, as ``materialize`` does, so that a ``materialize`` after the demo with the same
    configuration finds nothing changed."""
    os.environ.setdefault("MAMA_CONFIG", str(DEMO_CONFIG))
    import dagster as dg

    from mama_pipeline.definitions import defs
    from mama_pipeline.run_plan import observe_inputs

    home = dagster_home(load_settings().data_path)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        observe_inputs(defs, instance)
    return run_here(defs, None, home)


def main(argv: list[str] | None = None) -> int:
    """Dispatch a subcommand; bad input ends in one line on stderr and exit status 2."""
    return run_cli("mama-pipeline", lambda: _dispatch(argv))


def _dispatch(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(
        prog="mama-pipeline", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="materialise every asset on the demo-sized sample in one process, then summarise")
    m = sub.add_parser("materialize", help="materialise an asset selection (Dagster selection syntax)")
    m.add_argument("--select", default="*")
    m.add_argument(
        "--all",
        action="store_true",
        dest="everything",
        help="run every selected asset, changed or not (default: only what is new, stale, owed LLM answers or "
        "downstream of one of those; with nothing changed no run starts)",
    )
    m.add_argument(
        "--retry-parse-failed",
        action="store_true",
        help="re-ask every LLM answer cached as parse_failed (otherwise served from the cache as failed)",
    )
    m.add_argument(
        "--executor",
        choices=["multiprocess", "in_process", "dask"],
        default="multiprocess",
        help="multiprocess: each step in its own process (real runs); in_process: every run in "
        "this process, one line per step (small runs, no process start per step); dask: each "
        "step on a dask.distributed worker (needs --run-config naming the scheduler)",
    )
    m.add_argument(
        "--run-config",
        default=None,
        help="Dagster run config file passed to every run of the multiprocess or dask executor "
        "(required with --executor dask)",
    )
    p = sub.add_parser(
        "plan",
        help="print the requests, cache hits, prompt tokens and expected time of a "
        "selection's LLM stages, sending nothing",
    )
    p.add_argument("--select", default="*")
    p.add_argument(
        "--latency-s",
        type=float,
        default=None,
        help="seconds a request, for stages whose latencies the cache has not recorded",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=None,
        help="requests a second each server answers (e.g. the paper's judge: 0.5-0.7), to time the bounds "
        "(default: the recorded or --latency-s latency)",
    )
    p.add_argument(
        "--gpus-per-server", type=int, default=None, help="GPUs a server holds, to state the bounds' GPU-hours"
    )
    dr = sub.add_parser(
        "doctor",
        help="preflight: one request to every configured endpoint with its stage's schema, every input file, "
        "the settings across sections and the data folder's room, one line each; exit 0 only when all pass",
    )
    dr.add_argument("--timeout-s", type=float, default=60.0, help="seconds each endpoint has to answer")
    sb = sub.add_parser(
        "submit",
        help="check and score a new retriever's run file (TREC or BEIR-layout JSON) on "
        "mamaretrieval or a new system's answers file (JSONL) on mamabench",
    )
    sb.add_argument(
        "file",
        help="a TREC run or a BEIR-layout results JSON {query_id: {doc_id: score}} (--kind "
        "retrieval), or a JSONL of {item_id, answer, cited_chunk_ids} (--kind answers)",
    )
    sb.add_argument(
        "--kind",
        choices=["retrieval", "answers"],
        required=True,
        help="retrieval: a run on mamaretrieval; answers: an answering system on mamabench",
    )
    sb.add_argument("--name", required=True, help="the entry's name on the leaderboard")
    sb.add_argument("--model", default=None, help="the model behind the entry")
    sb.add_argument("--link", default=None, help="a link to the entry's paper or code")
    sb.add_argument(
        "--date",
        default=None,
        help="YYYY-MM-DD of the submission (default: today, UTC); stored once, kept on re-submission",
    )
    sb.add_argument(
        "--corpus-version",
        default=None,
        help="the corpus version the run was made on; refused when it is not the store's",
    )
    sub.add_parser("eval", help="score runs, evaluate retrievers on BEIR benchmarks, audits, exports", add_help=False)
    sub.add_parser("verify", help="check release folders against their manifests' hashes", add_help=False)
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "demo":
        return demo()
    if args.cmd == "eval":
        from mama_pipeline.evaluation.cli import main as eval_main

        return eval_main(rest)
    if args.cmd == "verify":
        from mama_pipeline.release.cli import main as verify_main

        return verify_main(rest)
    if args.cmd == "submit":
        from mama_pipeline.submissions.cli import submit

        return submit(args.file, args.kind, args.name, args.model, args.link, args.date, args.corpus_version)
    if args.cmd == "doctor":
        from mama_pipeline.preflight.cli import doctor

        return doctor(args.timeout_s)
    if args.cmd == "plan":
        from mama_pipeline.plan.cli import plan

        return plan(args.select, args.latency_s, args.rate, args.gpus_per_server)
    if args.retry_parse_failed:  # read by every stage's LLM client in the runs started below
        from mama_pipeline.llm.client import RETRY_PARSE_FAILED_ENV

        os.environ[RETRY_PARSE_FAILED_ENV] = "1"
    if args.executor == "in_process" and args.run_config:
        print(
            "mama-pipeline: error: --run-config is for the multiprocess and dask executors; in_process runs take none",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if args.executor == "dask" and not args.run_config:
        print(
            "mama-pipeline: error: --executor dask needs --run-config naming the scheduler "
            "(scripts/dask_cluster.sh start writes one; docs/scale-out.md)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return materialize(args.select, args.executor, args.run_config, args.everything, args.retry_parse_failed)


if __name__ == "__main__":
    sys.exit(main())
