"""Materialise an asset selection in this process: one terminal line per step, Dagster's events to a file.

The selection is cut into runs by :mod:`mama_pipeline.run_plan` (one run per
partitions definition and key, in dependency order) and each run executes in process on
the given instance, so the Dagster UI on that instance shows every run. No step pays a
process start, a model load or a JVM start twice.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import dagster as dg

from mama_pipeline.common.input_errors import one_line
from mama_pipeline.run_plan import RunStep, SkippedRun, UnchangedRun, execute_plan, plan_runs

FIREHOSE_FORMAT = "%(asctime)s %(levelname)s %(message)s"


WRAPPERS = ("DagsterExecutionStepExecutionError", "DagsterExecutionLoadInputError")  # Dagster's, around the cause
REASON_CHARS = 400  # a failure reason longer than this is cut (the Dagster log has all of it)


@dataclass
class StepOutcome:
    label: str
    ok: bool
    seconds: float
    reason: str | None = None  # a failed step's one-line reason


def failure_reason(failure_data) -> str:
    """The one-line reason of a step failure (Dagster's StepFailureData): a ``dg.Failure``'s description, or the
    step's own exception as ``Class: message`` (not Dagster's wrapper around it)."""
    user = failure_data.user_failure_data
    if user is not None and user.description:
        return one_line(user.description)[:REASON_CHARS]
    error = failure_data.error
    if error is None:
        return "no error recorded"
    if error.cls_name in WRAPPERS and error.cause is not None:
        error = error.cause
    head, sep, rest = error.message.partition(": ")  # "module.Class: message"
    text = rest if sep and head.rsplit(".", 1)[-1] == error.cls_name else error.message
    return one_line(f"{error.cls_name}: {text}")[:REASON_CHARS]


@dataclass
class RunTally:
    """What the runs did, gathered from Dagster's events."""

    steps: list[StepOutcome] = field(default_factory=list)
    materializations: int = 0
    checks_passed: int = 0
    checks_failed: list[str] = field(default_factory=list)
    checks_warned: list[str] = field(default_factory=list)  # failed checks of severity WARN
    runs: int = 0
    failed: bool = False
    skipped: list[str] = field(default_factory=list)  # "<step>: <why>" of each step not run for a failure
    unchanged: list[str] = field(default_factory=list)  # "<asset>[partition]: <why>" of each follower found fresh


def skipped_lines(skip: SkippedRun) -> list[str]:
    """``<asset>[ <partitions>]: depends on <asset>, not materialised by a failed run`` for each asset a failure
    left out."""
    parts = [p for p in skip.partition_keys if p is not None]
    where = f" [{', '.join(parts)}]" if parts else ""
    return [
        f"{key.to_user_string()}{where}: depends on {skip.because[key].to_user_string()}, not materialised by a "
        "failed run"
        for key in skip.asset_keys
    ]


def unchanged_lines(skip: UnchangedRun) -> list[str]:
    """``<asset>[<partition>]: its inputs came back unchanged`` for each asset a run left out because it was
    found fresh once the runs before it were done (``run_plan.still_planned``)."""
    where = f"[{skip.partition_key}]" if skip.partition_key is not None else ""
    return [f"{key.to_user_string()}{where}: {skip.reason}" for key in skip.asset_keys]


def unchanged_count(n: int) -> str:
    """The summary's line of the assets left out unchanged."""
    return f"{n} asset partitions skipped: their inputs came back unchanged"


class StepLines(logging.Handler):
    """A logging handler that turns Dagster step events into one terminal line per step."""

    def __init__(self, out: TextIO, tally: RunTally):
        super().__init__(level=logging.DEBUG)
        self.out = out
        self.tally = tally
        self.run_label = ""
        self._started: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        event = (getattr(record, "dagster_meta", None) or {}).get("dagster_event")
        if event is None:
            return
        kind = event.event_type_value
        if kind == "STEP_START":
            self._started[event.step_key] = time.monotonic()
        elif kind == "ASSET_MATERIALIZATION":
            self.tally.materializations += 1
        elif kind == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            name = evaluation.asset_check_key.to_user_string()
            if evaluation.passed:
                self.tally.checks_passed += 1
            elif evaluation.severity == dg.AssetCheckSeverity.WARN:
                self.tally.checks_warned.append(name)
            else:
                self.tally.checks_failed.append(name)
        elif kind == "STEP_SKIPPED":
            line = f"{event.step_key}{self.run_label}: a step it needs in the same run failed"
            self.tally.skipped.append(line)
            self.out.write(f"      skipped {line}\n")
            self.out.flush()
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            seconds = time.monotonic() - self._started.pop(event.step_key, time.monotonic())
            reason = None if kind == "STEP_SUCCESS" else failure_reason(event.step_failure_data)
            outcome = StepOutcome(f"{event.step_key}{self.run_label}", kind == "STEP_SUCCESS", seconds, reason)
            self.tally.steps.append(outcome)
            mark = "ok    " if outcome.ok else "FAILED"
            self.out.write(f"  {len(self.tally.steps):3d} {mark} {outcome.label:<48} {seconds:7.1f} s\n")
            if reason:
                self.out.write(f"             {reason}\n")
            self.out.flush()


def _logger_def(handler: logging.Handler, name: str) -> dg.LoggerDefinition:
    @dg.logger(description=f"mama_pipeline {name}")
    def _make(_init_context) -> logging.Logger:
        log = logging.Logger(f"mama_pipeline.{name}", level=logging.DEBUG)
        log.addHandler(handler)
        return log

    return _make


@contextmanager
def terminal_and_log(log_path: Path) -> Iterator[tuple[TextIO, TextIO]]:
    """Send everything written to stdout and stderr (Dagster, libraries, subprocesses: both the Python
    streams and file descriptors 1 and 2) to ``log_path``; yield (the real terminal, the log)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    with open(log_path, "a", buffering=1, encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with redirect_stdout(log), redirect_stderr(log):
                yield terminal, log
        finally:
            log.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            terminal.close()


def run_in_process(
    defs: dg.Definitions,
    keys: set[dg.AssetKey] | list[RunStep] | None,
    instance: dg.DagsterInstance,
    log_path: Path,
    tags: dict[str, str] | None = None,
) -> RunTally:
    """Materialise ``keys`` (None: every asset; a list: the runs already planned) run by run; a failed step stops
    only what depends on it (``run_plan.run_independent``), and each step left out is named."""
    graph = defs.resolve_asset_graph()
    steps = (
        keys if isinstance(keys, list) else plan_runs(graph, graph.materializable_asset_keys if keys is None else keys)
    )
    tally = RunTally()
    with terminal_and_log(log_path) as (terminal, log):
        lines = StepLines(terminal, tally)
        firehose = logging.StreamHandler(log)
        firehose.setFormatter(logging.Formatter(FIREHOSE_FORMAT))

        def on_run(n: int, total: int, step: RunStep, partition_key: str | None) -> None:
            lines.run_label = f" [{partition_key}]" if partition_key else ""
            names = ", ".join(k.to_user_string() for k in step.asset_keys)
            terminal.write(
                f"run {n}/{total}{lines.run_label}: {len(step.asset_keys)} assets"
                f" ({names[:60]}{'...' if len(names) > 60 else ''})\n"
            )

        def on_skip(skip: SkippedRun) -> None:
            for line in skipped_lines(skip):
                tally.skipped.append(line)
                terminal.write(f"      skipped {line}\n")

        def on_unchanged(skip: UnchangedRun) -> None:
            for line in unchanged_lines(skip):
                tally.unchanged.append(line)
                terminal.write(f"skipped {line}\n")

        loggers = {"steps": _logger_def(lines, "steps"), "firehose": _logger_def(firehose, "firehose")}
        try:
            results = execute_plan(
                defs,
                steps,
                instance,
                tags=tags,
                logger_defs=loggers,
                on_run=on_run,
                raise_on_error=False,
                on_skip=on_skip,
                on_unchanged=on_unchanged,
            )
        except Exception as exc:  # a failure outside any step (resource start, run setup)
            logging.getLogger(__name__).exception("run failed outside its steps")
            terminal.write(f"FAILED outside a step: {type(exc).__name__}: {exc}\n")
            tally.failed = True
            return tally
    tally.runs = len(results)
    tally.failed = not all(r.success for r in results) or bool(tally.skipped)  # a run failed, or one was cut
    return tally


def failed_steps_of_run(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """``FAILED <step>: <reason>`` for every step of a run that failed (a run made by another process)."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    return [
        f"FAILED {r.event_log_entry.dagster_event.step_key}: "
        f"{failure_reason(r.event_log_entry.dagster_event.step_failure_data)}"
        for r in records
    ]
