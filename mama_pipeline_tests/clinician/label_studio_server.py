"""A real Label Studio server on loopback, started by the project's own script (which installs it when missing)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from mama_pipeline_tests.support.processes import default_signals, free_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "label_studio.sh"
VENV = REPO / ".label-studio-venv"
VERSION_FILE = VENV / "lib" / "python3.11" / "site-packages" / "label_studio" / "core" / "version_.py"
START_TIMEOUT_S = 900  # a fresh machine installs Label Studio first (about a minute here, more on a cold cache)


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    email: str
    password: str
    log: Path
    env: dict[str, str] = field(repr=False)  # what scripts/label_studio.sh ran with (stop and add-user need it)
    process: subprocess.Popen = field(repr=False)  # the server itself: the script execs it


@contextlib.contextmanager
def running_label_studio(folder: Path) -> Iterator[Server]:
    port = free_port()
    email, password, token = "admin@example.org", secrets.token_urlsafe(16), secrets.token_hex(20)
    env = {
        **os.environ,
        "LABEL_STUDIO_USERNAME": email,
        "LABEL_STUDIO_PASSWORD": password,
        "LABEL_STUDIO_USER_TOKEN": token,
        "LABEL_STUDIO_PORT": str(port),
        "LABEL_STUDIO_DATA_DIR": str(folder / "label_studio_data"),
    }
    log_path = folder / "label_studio.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), "start"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=default_signals,
        )
    server = Server(
        url=f"http://127.0.0.1:{port}", token=token, email=email, password=password, log=log_path, env=env, process=proc
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{server.url}/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Label Studio did not start (exit {proc.poll()}); log:\n" + server.log.read_text()[-3000:]
                )
            time.sleep(0.5)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def login(url: str, email: str, password: str) -> httpx.Client:
    """A browser-like session logged in through Label Studio's login form."""
    session = httpx.Client(base_url=url)
    session.get("/user/login/")
    answer = session.post(
        "/user/login/",
        data={"email": email, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{url}/user/login/"},
    )
    assert answer.status_code == 302 and "sessionid" in session.cookies, answer.text[:300]
    return session
