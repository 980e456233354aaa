"""Background threads take spare CPU: their priority is lowered, the caller's is not."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from mama_pipeline.common.thread_priority import background_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are per thread on Linux only")
def test_a_background_thread_runs_ten_nice_levels_lower_and_leaves_the_caller_alone():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with ThreadPoolExecutor(1, initializer=background_thread) as pool:
        inside = pool.submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert inside == min(before + 10, 19)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before
