"""Corpus at release scale: parse and hash a 63,650-chunk bundle, then sample 4,540 chunks.

The bundle is synthetic (the sample corpus generator at full size) in the real
``chunks_for_rag.txt`` form (``<sep>[SOURCE:..|PAGE:..|CID:..]`` headers): 87
sources, the released tiers and quotas (5,216 targets over 19 sources), with five
sources and the OSCE source short so that 4,540 chunks are sampled, as in the
release. The same chunks are written twice, their CIDs hashing the body in one
bundle and breadcrumb plus body in the other; both are parsed, and their chunk ids
and corpus versions must agree. Prints wall time of each step (both conventions
side by side) and the process's peak resident memory.

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

from mama_pipeline.corpus._bundle import load_bundle, write_text_bundle
from mama_pipeline.corpus._sampling import sample_chunks
from mama_pipeline.corpus.settings import CorpusSettings
from mama_pipeline.sample_data.corpus.make_sample_corpus import TOPICS, SourceSpec, generate_source

TOTAL_CHUNKS = 63_650
N_SOURCES = 87
BOILERPLATE = ["copyright", "contents", "foreword", "objectives", "references", "form", "short"]
SHORT_SOURCES = {f"who-midwifery-education-modules-{i}": 150 for i in range(2, 7)} | {"nmc-midwifery-mock-osce": 112}
TIERS = {
    "very_high": (
        520,
        ["hesperian-a-book-for-midwives", "msf-essential-obstetric-and-newborn-care", "midwifery-essentials-6"],
    ),
    "high": (
        285,
        [
            "oxford-handbook-of-midwifery",
            "skills-for-midwifery-practice",
            *[f"who-midwifery-education-modules-{i}" for i in range(2, 7)],
            "who-platform-malta-guide-for-midwifery-skills",
        ],
    ),
    "moderate_high": (225, ["midwifery-essentials-3"]),
    "moderate": (
        173,
        [
            "clinical-practice-guidelines-midwifery-womens-health",
            "midwifery-essentials-2",
            "midwifery-essentials-5",
            "who-essential-childbirth-care-course",
            "nmc-midwifery-marking-criteria",
            "icm-essential-competencies-for-midwifery-practice",
        ],
    ),
    "low_moderate": (113, ["nmc-midwifery-mock-osce"]),
}
EXPECTED_SAMPLE = 4_540


def source_specs(multiple: float = 1.0) -> list[SourceSpec]:
    """The 87 sources of the release's shape; ``multiple`` scales the chunk total and the short sources' sizes
    (the boilerplate, seven chunks per source, does not scale)."""
    tiered = [s for _, sources in TIERS.values() for s in sources]
    slugs = tiered + [f"untiered-source-{i:02d}" for i in range(1, N_SOURCES - len(tiered) + 1)]
    content_total = round(TOTAL_CHUNKS * multiple) - N_SOURCES * len(BOILERPLATE)
    short = {s: max(1, round(n * multiple)) for s, n in SHORT_SOURCES.items()}
    free = [s for s in slugs if s not in short]
    rest = content_total - sum(short.values())
    if rest < len(free):
        raise ValueError(f"multiple {multiple} leaves {rest} content chunks for {len(free)} sources")
    sizes = {s: short.get(s, 0) for s in slugs}
    for i, s in enumerate(free):
        sizes[s] = rest // len(free) + (i < rest % len(free))
    topics = cycle(sorted(TOPICS))
    styles = cycle(["handbook", "protocol", "handbook", "educator", "osce"])
    return [
        SourceSpec(
            s, next(styles), [next(topics) for _ in range(5)], sizes[s], list(BOILERPLATE), inline_breadcrumb=i % 3 == 0
        )
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
        bundles = {cid_of: folder / f"chunks_for_rag-{cid_of}-cid.txt" for cid_of in ("body", "with_breadcrumb")}

        t0 = time.perf_counter()
        seen: set[str] = set()
        chunks = [c for spec in source_specs() for c in generate_source(spec, seen)]
        del seen
        for cid_of, bundle in bundles.items():
            n = write_text_bundle(bundle, chunks, cid_of=cid_of)
        del chunks
        t_gen = time.perf_counter() - t0
        first = bundles["body"].open(encoding="utf-8").readline().rstrip()
        print(
            f"generate: {n:,} chunks, {bundles['body'].stat().st_size / 2**20:.1f} MiB per bundle, two CID "
            f"conventions, in {t_gen:.2f} s (not part of the target); first line {first!r}"
        )

        parsed, t_parse = {}, {}
        for cid_of, bundle in bundles.items():
            t1 = time.perf_counter()
            parsed[cid_of] = load_bundle(bundle)
            t_parse[cid_of] = time.perf_counter() - t1
        for cid_of, p in parsed.items():
            print(
                f"parse+hash ({cid_of} CIDs): {p.chunks.height:,} chunks, {p.issues.height} issues, convention "
                f"{p.cid_convention}, corpus_version {p.corpus_version} in {t_parse[cid_of]:.2f} s"
            )
        body, crumb = parsed["body"], parsed["with_breadcrumb"]
        same = body.corpus_version == crumb.corpus_version and body.chunks.get_column("chunk_id").equals(
            crumb.chunks.get_column("chunk_id")
        )
        print(
            f"ids and corpus version equal across conventions: {same}; parse time ratio breadcrumb/body "
            f"{t_parse['with_breadcrumb'] / t_parse['body']:.2f}"
        )
        del parsed, crumb

        settings = CorpusSettings(tiers={k: {"quota": q, "sources": s} for k, (q, s) in TIERS.items()})
        t2 = time.perf_counter()
        result = sample_chunks(body.chunks, settings)
        t_sample = time.perf_counter() - t2
        target = int(result.report.get_column("quota").sum())
        print(
            f"sample: {result.sampled.height:,} of {target:,} targeted, {result.rejections.height:,} rejected as "
            f"boilerplate, shortfall {int(result.report.get_column('shortfall').sum())} in {t_sample:.2f} s"
        )

        total = t_parse["body"] + t_sample
        peak = peak_rss_mb()
        print(f"parse+hash+sample wall time: {total:.2f} s (target < 30 s)")
        print(f"peak resident memory: {peak:,.0f} MiB (target < 2048 MiB; both bundles' chunks held at once)")
        ok = (
            body.chunks.height == TOTAL_CHUNKS
            and result.sampled.height == EXPECTED_SAMPLE
            and same
            and first.startswith("<sep>[SOURCE:")
            and total < 30
            and peak < 2048
        )
        print("OK" if ok else "TARGET MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
