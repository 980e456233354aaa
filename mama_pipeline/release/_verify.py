"""Check a release folder against its manifest: every listed file's SHA-256, and row count where recorded.

Understands both releases: mamaretrieval's ``manifest.json`` (``files``: path ->
{sha256, bytes, rows}) and mamabench's ``manifests/manifest.json`` (``files``:
path -> sha256).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.common.input_errors import InputError, read_text
from mama_pipeline.release._files import row_count

MANIFEST_PLACES = ("manifest.json", "manifests/manifest.json")


class VerifyError(InputError):
    """A folder that has no readable manifest."""


@dataclass
class Verification:
    folder: Path
    manifest: str  # manifest path inside the folder
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per bad file
    unlisted: list[str] = field(default_factory=list)  # files the manifest does not cover (reported, not failed)

    @property
    def ok(self) -> bool:
        return not self.problems


def find_manifest(folder: Path) -> Path:
    if not folder.is_dir():
        raise VerifyError(
            f"{folder}: release folder does not exist" if not folder.exists() else f"{folder}: not a folder"
        )
    for rel in MANIFEST_PLACES:
        if (folder / rel).is_file():
            return folder / rel
    raise VerifyError(f"{folder}: no manifest (looked for {', '.join(MANIFEST_PLACES)})")


def _check_file(folder: Path, rel: str, expected: dict | str) -> str | None:
    path = folder / rel
    if not path.is_file():
        return f"{rel}: missing"
    want = expected if isinstance(expected, dict) else {"sha256": expected}
    digest = sha256_file(path)
    if digest != want.get("sha256"):
        return f"{rel}: sha256 {digest} does not match the manifest's {want.get('sha256')}"
    if want.get("bytes") is not None and path.stat().st_size != want["bytes"]:
        return f"{rel}: {path.stat().st_size} bytes, the manifest says {want['bytes']}"
    if want.get("rows") is not None:
        try:
            rows = row_count(path)
        except Exception as exc:  # an unreadable data file is a failed check, named
            return f"{rel}: cannot be read to count rows: {exc}"
        if rows != want["rows"]:
            return f"{rel}: {rows} rows, the manifest says {want['rows']}"
    return None


def verify_release(folder: str | Path) -> Verification:
    """Compare every file the manifest lists with the folder's copy."""
    folder = Path(folder)
    manifest_path = find_manifest(folder)
    try:
        manifest = json.loads(read_text(manifest_path, "manifest"))
        files = manifest["files"]
    except json.JSONDecodeError as exc:
        raise VerifyError(f"{manifest_path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except InputError as exc:
        raise VerifyError(str(exc)) from None
    except (KeyError, TypeError):
        raise VerifyError(f"{manifest_path}: not a release manifest: no 'files' map") from None
    if not isinstance(files, dict) or not files:
        raise VerifyError(f"{manifest_path}: not a release manifest: 'files' must map file paths to their hashes")
    rel_manifest = manifest_path.relative_to(folder).as_posix()
    result = Verification(folder, rel_manifest)
    for rel in sorted(files):
        problem = _check_file(folder, rel, files[rel])
        result.checked.append(rel)
        if problem:
            result.problems.append(problem)
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    result.unlisted = sorted(present - set(files) - {rel_manifest})
    return result
