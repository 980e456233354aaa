"""Seeded samples: round-robin across strata (pilot pairs, clinician agreement tasks) and uniform (clinician
estimation tasks)."""

from __future__ import annotations

import hashlib
import random

import polars as pl


def round_robin_sample(df: pl.DataFrame, strata: list[str], order: list[str], size: int, seed: int) -> pl.DataFrame:
    """``size`` rows taken one stratum at a time, strata visited in sorted order.

    Each stratum is shuffled with a seed derived from ``seed`` and the stratum's
    values alone, so adding rows to one stratum does not reshuffle the others;
    rare strata are represented. The result is sorted by ``order``.
    """
    queues = []
    for values, group in sorted(df.group_by(*strata), key=lambda kv: tuple(str(v) for v in kv[0])):
        rows = group.sort(*order).rows(named=True)
        random.Random(hashlib.sha256("|".join([str(seed), *map(str, values)]).encode()).digest()).shuffle(rows)
        queues.append(rows)
    picked: list[dict] = []
    while len(picked) < size and any(queues):
        for queue in queues:
            if queue and len(picked) < size:
                picked.append(queue.pop(0))
    return pl.DataFrame(picked, schema=df.schema).sort(*order)


def uniform_sample(df: pl.DataFrame, order: list[str], size: int, seed: int) -> pl.DataFrame:
    """``size`` rows drawn uniformly at random without replacement (all rows when there are fewer).

    Each row's key is a SHA-256 of ``seed`` and its ``order`` values; the rows
    with the ``size`` lowest keys are the sample. Every subset of ``size`` rows
    is equally likely; restricted to any subpopulation (one retriever's top-k
    pairs, say), the rows drawn from it are a uniform sample of that
    subpopulation given their number. Rows added later never reshuffle the
    others: a sampled row leaves only when a new row's key displaces it. The
    result is sorted by ``order``.
    """

    def key(row: dict) -> bytes:
        return hashlib.sha256("|".join([str(seed), *(str(row[c]) for c in order)]).encode()).digest()

    rows = sorted(df.rows(named=True), key=key)
    return pl.DataFrame(rows[:size], schema=df.schema).sort(*order)
