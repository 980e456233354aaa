"""Corpus at release scale: parse and hash a 63,650-chunk bundle, then sample 4,540 chunks.

The bundle is synthetic (the sample corpus generator at full size): 87 sources, the
released tiers and quotas (5,216 targets over 19 sources), with five sources and
the OSCE source short so that 4,540 chunks are sampled, as in the release.
Prints wall time of each step and the process's peak resident memory.

Run: ``.venv/bin/python benchmarks/corpus_scale.py [--out DIR]``
Targets: parse + hash + sample under 30 s, peak memory under 2 GB.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from itertools import cycle
from pathlib import Path

from mama_pipeline.corpus.bundle import load_bundle, write_text_bundle
from mama_pipeline.corpus.sampling import sample_chunks
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.sample_data.corpus.make_sample_corpus import TOPICS, SourceSpec, generate_source

TOTAL_CHUNKS = 63_650
N_SOURCES = 87
BOILERPLATE = ["copyright", "contents", "foreword", "objectives", "references", "form", "short"]
SHORT_SOURCES = {f"who-midwifery-education-modules-{i}": 150 for i in range(2, 7)} | {"nmc-midwifery-mock-osce": 112}
TIERS = {
    "very_high": (520, ["hesperian-a-book-for-midwives", "msf-essential-obstetric-and-newborn-care",
                        "midwifery-essentials-6"]),
    "high": (285, ["oxford-handbook-of-midwifery", "skills-for-midwifery-practice",
                   *[f"who-midwifery-education-modules-{i}" for i in range(2, 7)],
                   "who-platform-malta-guide-for-midwifery-skills"]),
    "moderate_high": (225, ["midwifery-essentials-3"]),
    "moderate": (173, [f"moderate-source-{i}" for i in range(1, 7)]),
    "low_moderate": (113, ["nmc-midwifery-mock-osce"]),
}
EXPECTED_SAMPLE = 4_540


def source_specs() -> list[SourceSpec]:
    tiered = [s for _, sources in TIERS.values() for s in sources]
    slugs = tiered + [f"untiered-source-{i:02d}" for i in range(1, N_SOURCES - len(tiered) + 1)]
    content_total = TOTAL_CHUNKS - N_SOURCES * len(BOILERPLATE)
    free = [s for s in slugs if s not in SHORT_SOURCES]
    rest = content_total - sum(SHORT_SOURCES.values())
    sizes = {s: SHORT_SOURCES.get(s, 0) for s in slugs}
    for i, s in enumerate(free):
        sizes[s] = rest // len(free) + (i < rest % len(free))
    topics = cycle(sorted(TOPICS))
    styles = cycle(["handbook", "protocol", "handbook", "educator", "osce"])
    return [
        SourceSpec(s, next(styles), [next(topics) for _ in range(5)], sizes[s], list(BOILERPLATE),
                   inline_breadcrumb=i % 3 == 0)
        for i, s in enumerate(slugs)
    ]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for the generated bundle (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        bundle = folder / "chunks_for_rag.txt"

        t0 = time.perf_counter()
        seen: set[str] = set()
        n = write_text_bundle(bundle, (c for spec in source_specs() for c in generate_source(spec, seen)))
        del seen
        t_gen = time.perf_counter() - t0
        print(f"generate: {n:,} chunks, {bundle.stat().st_size / 2**20:.1f} MiB in {t_gen:.2f} s "
              f"(not part of the target)")

        t1 = time.perf_counter()
        parsed = load_bundle(bundle)
        t_parse = time.perf_counter() - t1
        print(f"parse+hash: {parsed.chunks.height:,} chunks, {parsed.issues.height} issues, "
              f"corpus_version {parsed.corpus_version} in {t_parse:.2f} s")

        settings = CorpusSettings(tiers={k: {"quota": q, "sources": s} for k, (q, s) in TIERS.items()})
        t2 = time.perf_counter()
        result = sample_chunks(parsed.chunks, settings)
        t_sample = time.perf_counter() - t2
        target = int(result.report.get_column("quota").sum())
        print(f"sample: {result.sampled.height:,} of {target:,} targeted, {result.rejections.height:,} rejected as "
              f"boilerplate, shortfall {int(result.report.get_column('shortfall').sum())} in {t_sample:.2f} s")

        total = t_parse + t_sample
        peak = peak_rss_mb()
        print(f"parse+hash+sample wall time: {total:.2f} s (target < 30 s)")
        print(f"peak resident memory: {peak:,.0f} MiB (target < 2048 MiB)")
        ok = (parsed.chunks.height == TOTAL_CHUNKS and result.sampled.height == EXPECTED_SAMPLE
              and total < 30 and peak < 2048)
        print("OK" if ok else "TARGET MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
