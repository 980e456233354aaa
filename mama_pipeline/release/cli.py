"""``mama-pipeline verify FOLDER [FOLDER ...]``: check release folders against their manifests."""

from __future__ import annotations

import argparse
import sys

from mama_pipeline.release._verify import VerifyError, verify_release


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every folder matches its manifest, 1 when a file does not, 2 when a folder has no manifest."""
    ap = argparse.ArgumentParser(prog="mama-pipeline verify", description=__doc__)
    ap.add_argument("folders", nargs="+", help="release folders (holding manifest.json or manifests/manifest.json)")
    args = ap.parse_args(argv)
    code = 0
    for folder in args.folders:
        try:
            result = verify_release(folder)
        except VerifyError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            code = max(code, 2)
            continue
        for problem in result.problems:
            print(f"FAIL {folder}: {problem}")
        for rel in result.unlisted:
            print(f"note {folder}: {rel} is not covered by {result.manifest}")
        status = "OK" if result.ok else "FAILED"
        print(
            f"{status} {folder}: {len(result.checked) - len(result.problems)}/{len(result.checked)} files match "
            f"{result.manifest}"
        )
        if not result.ok:
            code = max(code, 1)
    return code


if __name__ == "__main__":
    sys.exit(main())
