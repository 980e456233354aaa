"""Headless Chromium over the DevTools protocol: log in with a session cookie, wait for text, measure, screenshot."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mama_pipeline_tests.headless_browser import find_chromium
from mama_pipeline_tests.support.processes import free_port

# Left/right/top/bottom of the smallest element inside the labelling view whose text contains each needle.
LAYOUT_JS = """(needles => needles.map(n => {
  let best = null;
  const root = document.querySelector('.lsf-main-view') || document.body;
  for (const el of root.querySelectorAll('*')) {
    if (el.children.length > 50) continue;
    const t = el.innerText || '';
    if (t.includes(n) && (!best || t.length < best.innerText.length)) best = el;
  }
  if (!best) return null;
  const r = best.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}))(%s)"""


class DevTools:
    def __init__(self, ws: Any):
        self._ws, self._ids = ws, itertools.count(1)

    def send(self, method: str, params: dict | None = None, timeout: float = 60) -> dict:
        msg_id = next(self._ids)
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self._ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def evaluate(self, expression: str) -> Any:
        return self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")


@contextlib.contextmanager
def chromium(profile: Path, width: int = 1600, height: int = 1100) -> Iterator[DevTools]:
    from websockets.sync.client import connect

    port = free_port()
    proc = subprocess.Popen(
        [
            find_chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-quic",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                    pages = [t for t in json.load(resp) if t["type"] == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.3)
        with connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30) as ws:
            yield DevTools(ws)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def open_logged_in(
    dt: DevTools, base: str, cookies: dict[str, str], url: str, needles: list[str], timeout: float = 120
) -> list[dict | None]:
    """Set the session cookies, open ``url``, wait until every needle is on the page; return their boxes."""
    dt.send("Network.enable")
    for name, value in cookies.items():
        dt.send("Network.setCookie", {"name": name, "value": value, "url": base})
    dt.send("Page.navigate", {"url": url})
    deadline = time.monotonic() + timeout
    while True:
        text = dt.evaluate("document.body ? document.body.innerText : ''") or ""
        if all(n in text for n in needles):
            time.sleep(1.0)  # let the layout settle
            return dt.evaluate(LAYOUT_JS % json.dumps(needles))
        if time.monotonic() > deadline:
            missing = [n for n in needles if n not in text]
            raise AssertionError(f"page {url} never showed {missing}; it shows: {text[:500]!r}")
        time.sleep(0.25)


def screenshot(dt: DevTools, out: Path) -> bytes:
    data = base64.b64decode(dt.send("Page.captureScreenshot", {"format": "png"})["data"])
    out.write_bytes(data)
    return data
