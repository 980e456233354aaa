"""Background threads: work that should take spare CPU rather than delay the requests beside it."""

from __future__ import annotations

import os
import threading


def background_thread() -> None:
    """Lower this thread's CPU priority by 10 (Linux: per thread; DuckDB's workers started from it inherit it), so
    cache writes take spare CPU rather than delaying the requests and answers. Elsewhere, or where not allowed,
    the thread keeps its priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + 10)
    except (AttributeError, OSError):  # not on Linux, or not allowed: the same work at normal priority
        pass
