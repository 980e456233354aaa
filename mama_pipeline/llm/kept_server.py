"""One embedded LLM server kept for every step of an in-process run.

Each LLM step otherwise starts its own llama.cpp server and re-reads the shared
start of its prompts (the judge's instructions are ~1,400 tokens, 10-20 s on one
core). Inside :func:`kept_for_the_run` the first step that needs the embedded
server starts it, and every later step with the same server settings reuses it,
so the model loads once and the server's prompt cache carries over from step to
step. Used by ``mama-pipeline demo`` and ``materialize --executor in_process``;
multiprocess runs keep one server per step.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from mama_pipeline.llm.embedded_server import embedded_server, one_server_at_a_time
from mama_pipeline.llm.settings import EmbeddedServerSettings

_lock = threading.Lock()
_kept: dict[str, object] | None = (
    None  # {"stack": ExitStack, "servers": {settings json: url}} while a run keeps servers
)


@contextlib.contextmanager
def kept_for_the_run() -> Iterator[None]:
    """Within this context, embedded servers started through :func:`kept_url` live until it exits."""
    global _kept
    with contextlib.ExitStack() as stack:
        with _lock:
            if _kept is not None:
                raise RuntimeError("embedded servers are already kept by an enclosing run")
            _kept = {"stack": stack, "servers": {}}
        try:
            yield
        finally:
            with _lock:
                _kept = None


def kept_url(settings: EmbeddedServerSettings, data_path: Path) -> str | None:
    """The ``/v1`` URL of the kept server for ``settings`` (started on first use), or None outside
    :func:`kept_for_the_run`."""
    with _lock:
        if _kept is None:
            return None
        key = settings.model_dump_json()
        servers: dict[str, str] = _kept["servers"]  # type: ignore[assignment]
        if key not in servers:
            stack: contextlib.ExitStack = _kept["stack"]  # type: ignore[assignment]
            if not servers:  # one machine-wide turn for all of this run's servers
                stack.enter_context(one_server_at_a_time(data_path / "embedded_llm_server.lock"))
            servers[key] = stack.enter_context(
                embedded_server(settings, data_path / "logs" / "embedded_llm_server.log")
            )
        return servers[key]
