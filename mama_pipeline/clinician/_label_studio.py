"""A small Label Studio REST client (plain HTTP: the SDK's pins clash with this project's).

Every failure is a :class:`LabelStudioError` naming the server URL and the
reason; the token is sent in a header and never appears in a message.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from mama_pipeline.common.input_errors import InputError

PAGE_SIZE = 500
EXCERPT = 120  # characters of an unexpected answer quoted in an error


class LabelStudioError(InputError):
    """A Label Studio server that cannot be used; one line with its URL and the reason."""


def _answer(resp: httpx.Response) -> str:
    """HTTP status, content type and the start of the body on one line (an HTML error page has many)."""
    body = " ".join(resp.text.split())
    cut = body[:EXCERPT] + ("..." if len(body) > EXCERPT else "")
    return f"HTTP {resp.status_code} ({resp.headers.get('content-type') or 'no content type'}): {cut!r}"


def token_from_env(env_name: str, url: str) -> str:
    token = os.environ.get(env_name, "")
    if not token:
        raise LabelStudioError(f"Label Studio at {url}: environment variable {env_name} (the API token) is not set")
    return token


class LabelStudio:
    """One server, authenticated with a legacy API token (``Authorization: Token ...``)."""

    def __init__(self, url: str, token: str, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Token {token}"}, timeout=timeout_s, follow_redirects=False
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LabelStudio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise LabelStudioError(f"Label Studio at {self.url} is unreachable ({type(exc).__name__}: {exc})") from None
        if resp.status_code in (401, 403):
            raise LabelStudioError(
                f"Label Studio at {self.url} rejected the API token (HTTP {resp.status_code} on {method} {path})"
            )
        if resp.status_code >= 400:
            raise LabelStudioError(f"Label Studio at {self.url}: {method} {path} failed with {_answer(resp)}")
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise LabelStudioError(
                f"Label Studio at {self.url}: {method} {path} answered {_answer(resp)}, not JSON; is this a Label "
                "Studio server?"
            ) from None

    def whoami(self) -> dict[str, Any]:
        """The token's user; fails early on a wrong URL or token."""
        return self._call("GET", "/api/current-user/whoami")

    def users(self) -> list[dict[str, Any]]:
        return self._call("GET", "/api/users/")

    def create_user(self, email: str, first_name: str = "", last_name: str = "") -> dict[str, Any]:
        return self._call(
            "POST",
            "/api/users/",
            json={
                "email": email,
                "username": email.split("@")[0],
                "first_name": first_name,
                "last_name": last_name,
            },
        )

    def projects(self) -> list[dict[str, Any]]:
        out, page = [], 1
        while True:
            got = self._call("GET", "/api/projects/", params={"page": page, "page_size": 100})
            out += got["results"]
            if not got.get("next"):
                return out
            page += 1

    def project_by_title(self, title: str) -> dict[str, Any] | None:
        found = [p for p in self.projects() if p["title"] == title]
        if len(found) > 1:
            raise LabelStudioError(f"Label Studio at {self.url}: {len(found)} projects are titled {title!r}")
        return found[0] if found else None

    def create_project(self, title: str, description: str, label_config: str, overlap: int = 1) -> dict[str, Any]:
        """A project whose every task is served to ``overlap`` annotators."""
        return self._call(
            "POST",
            "/api/projects/",
            json={
                "title": title,
                "description": description,
                "label_config": label_config,
                "show_skip_button": True,
                "maximum_annotations": overlap,
                "overlap_cohort_percentage": 100,
            },
        )

    def update_label_config(self, project_id: int, label_config: str) -> None:
        self._call("PATCH", f"/api/projects/{project_id}/", json={"label_config": label_config})

    def delete_project(self, project_id: int) -> None:
        self._call("DELETE", f"/api/projects/{project_id}/")

    def tasks(self, project_id: int) -> list[dict[str, Any]]:
        """Every task of a project (data and ids)."""
        out, page = [], 1
        while True:
            try:
                got = self._call(
                    "GET", "/api/tasks/", params={"project": project_id, "page": page, "page_size": PAGE_SIZE}
                )
            except LabelStudioError as exc:
                if "HTTP 404" in str(exc) and page > 1:  # past the last page
                    return out
                raise
            out += got["tasks"]
            if len(out) >= got["total"] or not got["tasks"]:
                return out
            page += 1

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> int:
        if not tasks:
            return 0
        got = self._call("POST", f"/api/projects/{project_id}/import", json=tasks)
        return int(got["task_count"])

    def export(self, project_id: int) -> list[dict[str, Any]]:
        """The project in Label Studio's JSON export format: tasks with their annotations."""
        return self._call("GET", f"/api/projects/{project_id}/export", params={"exportType": "JSON"})

    def annotate(self, task_id: int, result: list[dict[str, Any]], completed_by: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"result": result}
        if completed_by is not None:
            body["completed_by"] = completed_by
        return self._call("POST", f"/api/tasks/{task_id}/annotations/", json=body)
