"""The Dagster UI: ``dagster dev`` serves the project's workspace, a headless Chromium screenshots the asset graph,
a materialisation launched through GraphQL succeeds, and stopping the process group leaves no process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mama_pipeline_tests.headless_browser import find_chromium
from mama_pipeline_tests.support.processes import default_signals, free_port

REPO = Path(__file__).resolve().parents[2]
WORKSPACE = REPO / "workspace.yaml"
INSTANCE_YAML = REPO / "dagster.yaml"
DAGSTER = str(Path(sys.executable).with_name("dagster"))
CHEAP_ASSET = ["mamabench_raw_medmcqa"]  # reads one small bundled parquet file

LOCATIONS = """{ workspaceOrError { __typename ... on Workspace { locationEntries { name
  locationOrLoadError { __typename ... on RepositoryLocation { repositories { name assetNodes { id } } }
                        ... on PythonError { message } } } } } }"""
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on Error { message } } }"""
STATUS = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } ... on Error { message } } }"""


def graphql(base: str, query: str, variables: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out = json.load(resp)
    assert "errors" not in out, out["errors"]
    return out["data"]


def session_processes(sid: int) -> set[int]:
    """Live (non-zombie) processes of a session."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            found.add(int(entry.name))
    return found


def wait_for(what: str, probe, timeout: float, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, urllib.error.URLError, ValueError, AssertionError, KeyError):
            result = probe()
            if result:
                return result
        if proc.poll() is not None:
            pytest.fail(f"dagster dev exited ({proc.returncode}) while waiting for {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}:\n{log.read_text()[-3000:]}")
        time.sleep(1)


@contextlib.contextmanager
def dagster_dev(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    instance = yaml.safe_load(INSTANCE_YAML.read_text())
    instance.setdefault("nux", {"enabled": False})  # no first-visit pop-up over the screenshot
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance))
    port = free_port()
    log = tmp_path / "dagster_dev.log"
    env = {**os.environ, "DAGSTER_HOME": str(home), "MAMA_DATA_DIR": str(tmp_path / "data")}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [DAGSTER, "dev", "-w", str(WORKSPACE), "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=default_signals,
            start_new_session=True,
        )
    try:
        yield proc, f"http://127.0.0.1:{port}", log
    finally:
        leftovers = session_processes(proc.pid)
        if leftovers:  # the test has failed before stopping it: do not leak processes
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def stop_group(proc: subprocess.Popen, timeout: float = 60) -> set[int]:
    """SIGTERM the whole process group; the processes of the session still alive afterwards."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout)
    deadline = time.monotonic() + timeout
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    return session_processes(proc.pid)


def screenshot(browser: str, url: str, out: Path, profile: Path) -> None:
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--screenshot={out}",
            "--window-size=1600,1000",
            "--virtual-time-budget=15000",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


@pytest.mark.slow
def test_dagster_dev_graph_screenshot_graphql_materialisation_and_clean_stop(tmp_path):
    browser = find_chromium()  # before starting anything: a missing browser fails the test, it is never skipped
    with dagster_dev(tmp_path) as (proc, base, log):
        wait_for("the GraphQL endpoint", lambda: graphql(base, "{ version }", timeout=5)["version"], 180, proc, log)

        def loaded():
            entries = graphql(base, LOCATIONS)["workspaceOrError"]["locationEntries"]
            states = [e["locationOrLoadError"] for e in entries]
            if any(s is None for s in states):
                return None
            errors = [s["message"] for s in states if s["__typename"] == "PythonError"]
            if errors:
                pytest.fail(f"the code location failed to load: {errors}")
            return [
                (e["name"], r["name"], len(r["assetNodes"])) for e, s in zip(entries, states) for r in s["repositories"]
            ]

        repos = wait_for("the code location to load", loaded, 240, proc, log)
        location, repository, n_assets = repos[0]
        assert n_assets > 20, f"the graph shows only {n_assets} assets"

        shot = tmp_path / "asset_graph.png"
        screenshot(browser, f"{base}/asset-groups", shot, tmp_path / "chromium-profile")
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000, f"screenshot of {len(data)} bytes"

        params = {
            "selector": {
                "repositoryLocationName": location,
                "repositoryName": repository,
                "jobName": "__ASSET_JOB",
                "assetSelection": [{"path": CHEAP_ASSET}],
            },
            "runConfigData": {},
        }
        launched = graphql(base, LAUNCH, {"p": params})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]

        def finished():
            status = graphql(base, STATUS, {"id": run_id})["runOrError"]["status"]
            return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None

        assert wait_for(f"run {run_id}", finished, 300, proc, log) == "SUCCESS", log.read_text()[-3000:]
        started = session_processes(proc.pid)
        assert len(started) >= 3, "expected the webserver, the daemon and a code server"
        left = stop_group(proc)
        assert left == set(), f"processes left after stopping dagster dev: {sorted(left)}"
