"""CPU priorities: work that should take spare CPU rather than delay the LLM requests beside it.

An LLM-bound step spends little CPU, but each request waits for it: where a
CPU-bound step beside it takes the cores at equal priority, the judge's
requests wait in the event loop and the judge is left idle. So work that is
not waiting on an LLM runs at lower priority: the cache writer's thread
(:func:`background_thread`), and a step process that opened no LLM resource
(:func:`yield_cpu_unless_llm_bound`). Linux only (priorities are per thread
there); elsewhere, or where not allowed, everything keeps its priority.
"""

from __future__ import annotations

import multiprocessing
import os
import threading

LOWER_BY = 10  # nice levels: a CPU-bound neighbour keeps about a tenth of a core the LLM-bound side wants

_state = {"llm_bound": 0, "decided": 0}  # the process ids they hold for (a forked child decides anew)


def _lower(tid: int) -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(os.getpriority(os.PRIO_PROCESS, tid) + LOWER_BY, 19))
    except (AttributeError, OSError):  # not on Linux, not allowed, or the thread ended meanwhile
        pass


def background_thread() -> None:
    """Lower this thread's CPU priority by :data:`LOWER_BY` (threads it starts, e.g. DuckDB's workers, inherit
    it), so cache writes take spare CPU rather than delaying the requests and answers."""
    _lower(threading.get_native_id())


def mark_llm_bound() -> None:
    """This process runs a step that asks an LLM (the LLM resource was set up for it): it keeps its priority."""
    _state["llm_bound"] = os.getpid()


def yield_cpu_unless_llm_bound() -> None:
    """Once per process: in a step process of a multiprocess run (one started by ``multiprocessing``) whose step
    set up no LLM resource, lower every thread of the process by :data:`LOWER_BY` (threads started later inherit
    it). Called at a step's first use of the settings, after its resources are set up. A process that runs
    several steps (a dask worker) keeps what its first step decided; the in-process executor's is never
    lowered."""
    if _state["decided"] == os.getpid():
        return
    _state["decided"] = os.getpid()
    if (
        _state["llm_bound"] == os.getpid()
        or multiprocessing.parent_process() is None
        or not os.path.isdir("/proc/self/task")
    ):
        return
    for tid in os.listdir("/proc/self/task"):
        _lower(int(tid))
