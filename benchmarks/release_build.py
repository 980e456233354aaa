"""Build and verify a mamaretrieval release folder at the size of the published v0.2.0 release.

Synthetic inputs with the released shape: 63,650 chunks of about 200 words, 3,185
queries, six retrievers' top-20 (382,200 ranking rows), and a pool of about 70 pairs
per query, every pair labelled with about 80 words of reasoning. Prints the wall time
of the build (checks, tables, parquet, card, manifest, atomic rename) and of the
verification, the folder's size and the peak resident memory.

    .venv/bin/python benchmarks/release_build.py [--scale 1.0] [--out /tmp/release-bench]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import time
from pathlib import Path

from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline.release._verify import verify_release
from mama_pipeline_tests.support.synthetic_release import synthetic_inputs


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/release-bench"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    inp = synthetic_inputs(args.scale)
    t_gen = time.perf_counter() - t0
    rss_inputs = peak_mib()
    shutil.rmtree(args.out, ignore_errors=True)
    t0 = time.perf_counter()
    manifest = write_mamaretrieval_release(args.out / "bench", inp)
    t_build = time.perf_counter() - t0
    rss_build = peak_mib()
    t0 = time.perf_counter()
    result = verify_release(args.out / "bench")
    t_verify = time.perf_counter() - t0
    assert result.ok, result.problems
    f = manifest["figures"]
    size = sum(e["bytes"] for e in manifest["files"].values())
    print(
        f"scale {args.scale}: {f['chunks']} chunks, {f['queries']} queries, {f['rankings']} ranking rows, "
        f"{f['judged_pairs']} labels"
    )
    print(f"inputs generated in {t_gen:.1f} s (peak RSS {rss_inputs:.0f} MiB)")
    print(
        f"release built in {t_build:.2f} s (peak RSS {rss_build:.0f} MiB), {size / 2**20:.1f} MiB in "
        f"{len(manifest['files']) + 1} files"
    )
    print(f"release verified in {t_verify:.2f} s")
    for rel, entry in manifest["files"].items():
        print(f"  {rel:<36} {entry['bytes'] / 2**20:8.2f} MiB  rows={entry['rows']}")
    shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
