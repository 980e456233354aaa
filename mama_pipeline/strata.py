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

    Rows are put in ``order`` and shuffled with a generator seeded by ``seed``
    alone, so the same rows and seed give the same sample. Every subset of
    ``size`` rows is equally likely; restricted to any subpopulation (one
    retriever's top-k pairs, say), the rows drawn from it are a uniform sample
    of that subpopulation given their number. The result is sorted by ``order``.
    """
    rows = df.sort(*order).rows(named=True)
    random.Random(hashlib.sha256(f"{seed}|uniform".encode()).digest()).shuffle(rows)
    return pl.DataFrame(rows[:size], schema=df.schema).sort(*order)
