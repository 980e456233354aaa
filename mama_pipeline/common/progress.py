"""Progress of long work: a tqdm bar in a terminal, periodic lines in Dagster run logs.

Pure modules call :func:`track` and never learn where they run: inside a Dagster step
the lines go to that step's log (``label: done/total unit, rate/s, est. Ns left`` every
``every_s`` seconds and at the end); in a terminal a tqdm bar shows rate and time left;
elsewhere (a CI log, a pipe) the same periodic lines go to stderr.

A rate and a time left are extrapolations, so they are shown only for work whose units are
``alike`` (texts to encode, pairs to judge: the rate so far predicts the rest). Units of
unlike size (retrievers, benchmarks, steps) show the count and the time elapsed, never an
estimate; the work inside each of them reports its own progress, with its own estimate.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

EVERY_S = 10.0


def dagster_log() -> Callable[[str], None] | None:
    """``info`` of the current Dagster step's log, or None outside a step."""
    try:
        from dagster._core.execution.context.compute import current_execution_context
    except ImportError:  # pragma: no cover - dagster is a dependency
        return None
    context = current_execution_context.get()
    return context.log.info if context is not None else None


def progress_line(label: str, done: int, total: int | None, unit: str, elapsed: float, alike: bool = False) -> str:
    """``label: done/total unit, rate/s, est. Ns left`` for ``alike`` units (the figures a person waiting
    needs); ``label: done/total unit, Ns elapsed`` for units of unlike size, whose rate predicts nothing."""
    of = f"/{total}" if total is not None else ""
    line = f"{label}: {done}{of} {unit}"
    if alike:
        rate = done / elapsed if elapsed > 0 else 0.0
        line += f", {rate:.3g}/s"
    if total is not None and done >= total:
        return line + f", done in {elapsed:.1f}s"
    if not alike:
        return line + f", {elapsed:.0f}s elapsed"
    if total is not None:
        line += f", est. {(total - done) / rate:.0f}s left" if rate > 0 else ", est. unknown left"
    return line


class Progress:
    """Counts work done; shows it as a bar or as periodic lines."""

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str,
        log: Callable[[str], None] | None,
        stream: TextIO,
        every_s: float,
        heartbeat: bool = False,
        alike: bool = False,
    ):
        self.label, self.total, self.unit, self.alike = label, total, unit, alike
        self.done = 0
        self._log = log
        self._every_s = every_s
        self._started = self._last = time.monotonic()
        self._bar = None
        self._stop = threading.Event()
        self._logged = -1  # the count the last line showed
        if log is None and stream.isatty():
            from tqdm import tqdm

            bar_format = None  # tqdm's own: rate and time left
            if not alike:  # the count and the time elapsed only
                bar_format = (
                    "{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}]"
                    if total is not None
                    else "{desc}: {n_fmt}{unit} [{elapsed}]"
                )
            self._bar = tqdm(
                total=total,
                desc=label,
                unit=f" {unit}",
                file=stream,
                dynamic_ncols=True,
                leave=True,
                bar_format=bar_format,
            )
        elif log is None:
            self._log = lambda line: print(line, file=stream, flush=True)
        if heartbeat:  # work that reports nothing until it ends (an index build): a line every every_s
            threading.Thread(target=self._beat, daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s):
            if self._bar is not None:
                self._bar.refresh()
            else:
                self._line(time.monotonic())

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self._every_s:
            self._last = now
            self._line(now)

    def _line(self, now: float) -> None:
        self._logged = self.done
        self._log(progress_line(self.label, self.done, self.total, self.unit, now - self._started, self.alike))

    def close(self, failed: bool = False) -> None:
        """End the bar or write the last line; a failed piece of work leaves its error the last word."""
        self._stop.set()
        if self._bar is not None:
            self._bar.leave = self._bar.leave and not failed
            self._bar.close()
        elif not failed and (self._logged != self.done or self.total is None or self.done < self.total):
            self._line(time.monotonic())


@contextmanager
def track(
    label: str,
    total: int | None,
    unit: str = "items",
    log: Callable[[str], None] | None = None,
    stream: TextIO | None = None,
    every_s: float = EVERY_S,
    heartbeat: bool = False,
    alike: bool = False,
) -> Iterator[Progress]:
    """Progress of one piece of work; ``log`` defaults to the current Dagster step's log.

    ``heartbeat``: also report every ``every_s`` seconds while nothing is counted.
    ``alike``: the units are comparable work, so a rate and a time left may be extrapolated from them;
    left false (the default), neither is shown."""
    p = Progress(label, total, unit, log or dagster_log(), stream or sys.stderr, every_s, heartbeat, alike)
    try:
        yield p
    except BaseException:
        p.close(failed=True)
        raise
    p.close()
