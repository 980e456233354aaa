"""The leaderboard folder inside each release: mamaretrieval's carries its three retrieval tracks, mamabench's its
three answer tracks, as ``leaderboard/`` (the same bytes as ``<data_dir>/leaderboard/<benchmark>``), rebuilt from
the stored tables so equal inputs give equal bytes. Under the held-out rule the folder holds public values only.
When no leaderboard was materialised the release has no ``leaderboard/`` folder (and no card section on it).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from mama_pipeline.leaderboard import (
    BENCHMARK_TRACKS,
    JSON_FILE,
    PAGE_FILE,
    Stats,
    answer_specs,
    facts,
    folder_files,
    measures_of,
    retrieval_specs,
    smoke_banners,
)
from mama_pipeline.release._configurations import ConfigurationPart
from mama_pipeline.store import Store

FOLDER = "leaderboard"
TABLES = ("leaderboard", "leaderboard_comparisons", "leaderboard_per_query")
ID_FIELD = {"mamaretrieval": "query_id", "mamabench": "item_id"}


@dataclass(frozen=True)
class ReleasedLeaderboard:
    files: dict[str, bytes]  # release path -> bytes
    card_section: str
    manifest: dict


def _stored(store: Store, benchmark: str) -> list[pl.DataFrame] | None:
    if not all(store.table_exists(t) for t in TABLES):
        return None
    frames = [store.read_table(t, partitions=[benchmark]).drop("benchmark") for t in TABLES]
    return frames if frames[0].height else None


def released_leaderboard(s, store: Store, benchmark: str) -> ReleasedLeaderboard | None:
    """The benchmark's leaderboard folder as release files, or None when it was never materialised."""
    stored = _stored(store, benchmark)
    if stored is None:
        return None
    entries, comparisons, per_query = stored
    specs = retrieval_specs(s) if benchmark == "mamaretrieval" else answer_specs()
    cfg = s.evaluation if benchmark == "mamaretrieval" else s.systems
    stats = Stats(cfg.resamples, cfg.seed, cfg.confidence, cfg.alpha)
    rule = s.release.held_out.rule(ID_FIELD[benchmark])
    files = folder_files(
        benchmark,
        measures_of(specs),
        entries,
        comparisons,
        per_query,
        facts(benchmark, stats, rule, specs) | {"banners": smoke_banners(s, benchmark)},
    )
    heads = entries.filter(pl.col("headline"))
    per_track = {t: heads.filter(pl.col("track") == t).height for t in BENCHMARK_TRACKS[benchmark]}
    submissions = heads.filter(pl.col("source") == "submission")["entry_id"].n_unique()
    section = (
        "## Leaderboard\n\n"
        f"`{FOLDER}/` holds this benchmark's leaderboards (tracks {', '.join(BENCHMARK_TRACKS[benchmark])}; entries "
        f"per track: {', '.join(f'{t} {n}' for t, n in per_track.items())}; {submissions} submission(s)): "
        f"`{FOLDER}/{JSON_FILE}` (every entry's means with 95% bootstrap intervals, Judged@k beside retrieval "
        "measures, paired tests of every two entries with Holm's correction across the board, and each entry's "
        "standing against the best from a step-down range permutation test: below, tied, or not separable at "
        f"this n, with the smallest p the test can attain), `{FOLDER}/{PAGE_FILE}` (the same as a page) and "
        f"`{FOLDER}/per_query/<track>/<configured|submission>/<name>.tsv` (`query_id`, `measure`, `value`: every "
        "value an entry's figures come from), so any paired test against any entry can be re-run without "
        "rescoring it. Each release carries the leaderboards of its own benchmark (mamaretrieval: main, "
        "robustness, multi-passage; mamabench: mcq, short answer, rubric)."
        + (
            " Under the held-out split its figures and files are of the public part, with the held-out mean and "
            "the gap beside them."
            if rule.active
            else ""
        )
        + "\n"
    )
    return ReleasedLeaderboard(
        {f"{FOLDER}/{p}": b for p, b in files.items()},
        section,
        {"path": FOLDER, "entries_per_track": per_track, "submissions": submissions},
    )


def mamaretrieval_part(s, store: Store, inp):
    """The mamaretrieval release's ``leaderboard`` configuration (files only: no hub config)."""
    got = released_leaderboard(s, store, "mamaretrieval")
    if got is None:
        return None
    return ConfigurationPart(
        FOLDER, {}, texts=got.files, card_section=got.card_section, manifest=got.manifest, public_only=True
    )


def mamabench_files(s, store: Store) -> tuple[dict[str, bytes], list[str]]:
    """(files, card sections) the mamabench release adds for its leaderboard; empty when none was materialised."""
    got = released_leaderboard(s, store, "mamabench")
    return ({}, []) if got is None else (got.files, [got.card_section])
