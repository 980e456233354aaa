"""scripts/label_studio.sh on a server of its own: nothing reported outside, Label Studio's own version kept,
annotator accounts added while sign-up is disabled, and stop."""
import json
import re
import secrets
import subprocess
from pathlib import Path

import httpx
import pytest

from mama_pipeline_tests.clinician.label_studio_server import REPO, SCRIPT, login, running_label_studio

pytestmark = pytest.mark.slow
LS_PACKAGE = REPO / ".label-studio-venv" / "lib" / "python3.11" / "site-packages" / "label_studio"
VERSION_FILE = LS_PACKAGE / "core" / "version_.py"
NOTHING_OUT = {  # Label Studio 1.23 reads LABEL_STUDIO_<NAME> before <NAME>
    "LABEL_STUDIO_SENTRY_DSN": "", "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "", "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
    "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
}


def _script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    return dict(kv.split("=", 1) for kv in raw.split("\0") if kv)


def test_server_reports_nothing_outside_keeps_its_version_takes_annotators_and_stops(tmp_path):
    version_file = VERSION_FILE.stat().st_mtime_ns
    with running_label_studio(tmp_path) as server:
        environ = _environ(server.process.pid)
        assert {k: environ.get(k) for k in NOTHING_OUT} == NOTHING_OUT
        assert environ["GIT_CEILING_DIRECTORIES"] == str((REPO / ".label-studio-venv").resolve())
        admin = login(server.url, server.email, server.password)
        page = admin.get("/version/").text  # a superuser sees the running server's settings
        settings = json.loads(page.removeprefix("<pre>").removesuffix("</pre>"))["settings"]
        assert {k: settings[k] for k in ("SENTRY_DSN", "FRONTEND_SENTRY_DSN", "COLLECT_ANALYTICS",
                                         "LATEST_VERSION_CHECK")} == {
            "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "COLLECT_ANALYTICS": "False", "LATEST_VERSION_CHECK": "False"}
        projects = admin.get("/projects/").text  # what a browser gets: no error reporting, no analytics
        assert "sentry_dsn: null" in projects and "collect_analytics: false" in projects
        assert not re.search(r"<script[^>]*src=[^>]*(sentry|googletagmanager)", projects)

        backend = httpx.get(f"{server.url}/api/version").json()["label-studio-os-backend"]
        ours = subprocess.run(["git", "cat-file", "-e", f"{backend['commit']}^{{commit}}"], cwd=REPO)
        assert ours.returncode != 0, f"Label Studio reports this project's commit {backend['commit']} as its own"
        assert VERSION_FILE.stat().st_mtime_ns == version_file  # start-up left Label Studio's version_.py alone

        password = secrets.token_urlsafe(12)
        signup = httpx.get(f"{server.url}/user/signup/")  # sign-up without an invitation link stays off
        assert signup.status_code != 200 or "id_password" not in signup.text
        added = _script({**server.env, "LABEL_STUDIO_NEW_USER_PASSWORD": password}, "add-user", "midwife@example.org")
        assert added.returncode == 0, added.stderr
        assert "added midwife@example.org" in added.stdout and password not in added.stdout + added.stderr
        midwife = login(server.url, "midwife@example.org", password)
        me = midwife.get("/api/current-user/whoami").json()
        assert me["email"] == "midwife@example.org"
        users = httpx.get(f"{server.url}/api/users/", headers={"Authorization": f"Token {server.token}"}).json()
        assert "midwife@example.org" in {u["email"] for u in users}  # in the admin's organization
        again = _script({**server.env, "LABEL_STUDIO_NEW_USER_PASSWORD": password}, "add-user", "midwife@example.org")
        assert again.returncode == 1 and "already has an account" in again.stderr

        stopped = _script(server.env, "stop")
        assert stopped.returncode == 0 and f"Label Studio (pid {server.process.pid}) stopped" in stopped.stdout
        assert server.process.wait(30) is not None
        assert not (Path(server.env["LABEL_STUDIO_DATA_DIR"]) / "label_studio.pid").exists()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.url}/health")
        assert _script(server.env, "stop").stdout.startswith("no Label Studio is running on ")
