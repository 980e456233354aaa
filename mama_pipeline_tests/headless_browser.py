"""Load a page in headless Chromium over the DevTools protocol: what rendered, which images loaded, what errors.

Chromium is found wherever it is installed (``CHROMIUM`` environment variable, then the
usual command names on PATH, then Debian's and Google's install paths); scripts/test.sh
installs Debian's ``chromium`` when it is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from mama_pipeline_tests.support.processes import default_signals, free_port

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
PATHS = (
    "/usr/bin/chromium",
    "/usr/lib/chromium/chromium",
    "/opt/google/chrome/chrome",
    "/snap/bin/chromium",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)

PAGE_FACTS = """JSON.stringify({
  title: document.title,
  text: document.body ? document.body.innerText.length : 0,
  headings: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
  images: Array.from(document.images).map(i => ({src: i.getAttribute('src'),
                                                  loaded: i.complete && i.naturalWidth > 0,
                                                  width: i.naturalWidth}))
})"""


def find_chromium() -> str:
    """The Chromium (or Chrome) executable; a test that needs one fails (never skips) when there is none."""
    import pytest

    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    found = next((p for p in PATHS if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail(
            f"no Chromium found (tried {', '.join(NAMES)} on PATH and {', '.join(PATHS)}; set CHROMIUM to "
            "its path, or run scripts/test.sh as root to install Debian's chromium)"
        )
    return found


@dataclass
class PageCheck:
    title: str
    text_chars: int
    headings: list[str]
    images: list[dict]
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads


@contextlib.contextmanager
def _browser(chromium: str):
    port = free_port()
    profile = tempfile.mkdtemp(prefix="mama-chromium-")
    cmd = [
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--remote-debugging-port={port}",
        "--remote-allow-origins=*",
        "about:blank",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=default_signals
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    yield pages[0]["webSocketDebuggerUrl"]
                    return
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{chromium} did not start its DevTools endpoint (exit {proc.poll()})")
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def check_page(path: Path, chromium: str, timeout_s: float = 60) -> PageCheck:
    """Open ``path`` (a local HTML file), wait for its load event, and report what the page shows."""
    facts, errors = evaluate_page(path, chromium, PAGE_FACTS, timeout_s=timeout_s)
    return PageCheck(facts["title"], facts["text"], facts["headings"], facts["images"], errors)


def evaluate_page(
    path: Path, chromium: str, expression: str, width: int | None = None, timeout_s: float = 60
) -> tuple[dict, list[str]]:
    """Open ``path`` (in a window ``width`` CSS pixels wide when given), wait for its load event, and return the
    JSON value of ``expression`` (a script that returns ``JSON.stringify(...)``) with the page's errors."""
    from websockets.sync.client import connect

    with _browser(chromium) as ws_url, connect(ws_url, max_size=None, open_timeout=30) as ws:
        ids = iter(range(1, 1_000_000))
        errors: list[str] = []
        loaded = False

        def call(method: str, params: dict | None = None) -> dict:
            msg_id = next(ids)
            ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
            deadline = time.monotonic() + timeout_s
            while True:
                msg = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg.get("result", {})
                _event(msg)

        def _event(msg: dict) -> None:
            nonlocal loaded
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Page.loadEventFired":
                loaded = True
            elif method == "Runtime.exceptionThrown":
                errors.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                errors.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())

        for domain in ("Page", "Runtime", "Log"):
            call(f"{domain}.enable")
        if width is not None:
            metrics = {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": False}
            call("Emulation.setDeviceMetricsOverride", metrics)
        call("Page.navigate", {"url": path.resolve().as_uri()})
        deadline = time.monotonic() + timeout_s
        while not loaded:
            _event(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))))
        facts = json.loads(
            call("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"]["value"]
        )
        return facts, errors
