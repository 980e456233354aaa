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
    queues = []  # per stratum (its rows in ``order``, the shuffled positions of them still to take)
    for values, group in sorted(df.group_by(*strata), key=lambda kv: tuple(str(v) for v in kv[0])):
        positions = list(range(group.height))  # shuffled as the rows would be: the same permutation
        random.Random(hashlib.sha256("|".join([str(seed), *map(str, values)]).encode()).digest()).shuffle(positions)
        queues.append((group.sort(*order), positions[::-1]))
    taken: list[list[int]] = [[] for _ in queues]
    count = 0
    while count < size and any(rest for _, rest in queues):
        for (_, rest), mine in zip(queues, taken):
            if rest and count < size:
                mine.append(rest.pop())
                count += 1
    picked = [rows[mine] for (rows, _), mine in zip(queues, taken) if mine]
    return (pl.concat(picked) if picked else df.clear()).sort(*order)


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

    def key(values: tuple) -> bytes:
        return hashlib.sha256("|".join([str(seed), *map(str, values)]).encode()).digest()

    keys = [key(values) for values in df.select(order).iter_rows()]
    drawn = sorted(range(df.height), key=keys.__getitem__)[:size]
    return df[drawn].sort(*order)
