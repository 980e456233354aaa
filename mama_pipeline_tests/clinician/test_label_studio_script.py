"""scripts/label_studio.sh on the test run's Label Studio server (clinician/conftest.py): nothing reported outside,
Label Studio's own version kept, annotator accounts added while sign-up is disabled, and stop (run after every other
test of the server: it ends it)."""

import json
import re
import secrets
import subprocess
from pathlib import Path

import httpx
import pytest

from mama_pipeline_tests.clinician.label_studio_server import SCRIPT, VENV, VERSION_FILE, Server, login

pytestmark = pytest.mark.slow
NOTHING_OUT = {  # Label Studio 1.23 reads LABEL_STUDIO_<NAME> before <NAME>
    "LABEL_STUDIO_SENTRY_DSN": "",
    "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "",
    "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
    "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
}


def _script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


def test_started_server_sends_no_error_reports_or_analytics(label_studio: Server):
    server = label_studio
    raw = Path(f"/proc/{server.process.pid}/environ").read_bytes().decode()
    environ = dict(kv.split("=", 1) for kv in raw.split("\0") if kv)
    assert {k: environ.get(k) for k in NOTHING_OUT} == NOTHING_OUT
    admin = login(server.url, server.email, server.password)
    page = admin.get("/version/").text  # a superuser sees the running server's settings
    settings = json.loads(page.removeprefix("<pre>").removesuffix("</pre>"))["settings"]
    assert {
        k: settings[k] for k in ("SENTRY_DSN", "FRONTEND_SENTRY_DSN", "COLLECT_ANALYTICS", "LATEST_VERSION_CHECK")
    } == {"SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "COLLECT_ANALYTICS": "False", "LATEST_VERSION_CHECK": "False"}
    projects = admin.get("/projects/").text  # what a browser gets: no error reporting, no analytics
    assert "sentry_dsn: null" in projects and "collect_analytics: false" in projects
    assert not re.search(r"<script[^>]*src=[^>]*(sentry|googletagmanager)", projects)


def test_label_studio_keeps_its_own_version(label_studio: Server, version_before_start: int | None):
    server, before = label_studio, version_before_start
    backend = httpx.get(f"{server.url}/api/version").json()["label-studio-os-backend"]
    around = VENV.resolve().parent  # the repository git would find above Label Studio's package
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{backend['commit']}^{{commit}}"], cwd=around, capture_output=True
    )
    assert known.returncode != 0, f"Label Studio reports a commit of {around} ({backend['commit']}) as its own"
    assert VERSION_FILE.stat().st_mtime_ns == before  # start-up left Label Studio's version_.py alone


def test_add_user_makes_an_annotator_account_while_signup_is_disabled(label_studio: Server):
    server = label_studio
    signup = httpx.get(f"{server.url}/user/signup/")  # no sign-up without an invitation link
    assert signup.status_code != 200 or "id_password" not in signup.text
    password = secrets.token_urlsafe(12)
    env = {**server.env, "LABEL_STUDIO_NEW_USER_PASSWORD": password}
    added = _script(env, "add-user", "midwife@example.org")
    assert added.returncode == 0, added.stderr
    assert "added midwife@example.org" in added.stdout and password not in added.stdout + added.stderr
    me = login(server.url, "midwife@example.org", password).get("/api/current-user/whoami").json()
    assert me["email"] == "midwife@example.org"
    users = httpx.get(f"{server.url}/api/users/", headers={"Authorization": f"Token {server.token}"}).json()
    assert "midwife@example.org" in {u["email"] for u in users}  # a member of the admin's organization
    again = _script(env, "add-user", "midwife@example.org")
    assert again.returncode == 1 and "already has an account" in again.stderr


@pytest.mark.stops_label_studio
def test_stop_ends_the_server_of_the_data_dir(label_studio: Server):
    server = label_studio
    stopped = _script(server.env, "stop")
    assert stopped.returncode == 0 and f"Label Studio (pid {server.process.pid}) stopped" in stopped.stdout
    assert server.process.wait(30) is not None
    assert not (Path(server.env["LABEL_STUDIO_DATA_DIR"]) / "label_studio.pid").exists()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health")
    assert _script(server.env, "stop").stdout.startswith("no Label Studio is running on ")
