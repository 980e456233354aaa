"""The seeded samples draw the rows a plain row-by-row draw would: each stratum's rows shuffled as a list, taken
round robin; the rows with the lowest SHA-256 keys."""

from __future__ import annotations

import hashlib
import random

import polars as pl
import pytest

from mama_pipeline.common.strata import round_robin_sample, uniform_sample


def _draw_row_by_row(df: pl.DataFrame, strata: list[str], order: list[str], size: int, seed: int) -> list[tuple]:
    """The reference: every stratum's rows (as tuples, in ``order``) shuffled, then taken one stratum at a time."""
    queues = []
    for values, group in sorted(df.group_by(*strata), key=lambda kv: tuple(str(v) for v in kv[0])):
        rows = group.sort(*order).rows()
        random.Random(hashlib.sha256("|".join([str(seed), *map(str, values)]).encode()).digest()).shuffle(rows)
        queues.append(rows)
    picked = []
    while len(picked) < size and any(queues):
        for queue in queues:
            if queue and len(picked) < size:
                picked.append(queue.pop(0))
    return sorted(picked, key=lambda r: tuple(r[df.columns.index(c)] for c in order))


def _lowest_keys(df: pl.DataFrame, order: list[str], size: int, seed: int) -> list[tuple]:
    def key(row: tuple) -> bytes:
        return hashlib.sha256("|".join([str(seed), *(str(row[df.columns.index(c)]) for c in order)]).encode()).digest()

    return sorted(sorted(df.rows(), key=key)[:size], key=lambda r: tuple(r[df.columns.index(c)] for c in order))


def _frame(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    return pl.DataFrame(
        {
            "query_id": [f"q{i:04d}" for i in range(n)],
            "chunk_id": [f"c{rng.randrange(50)}" for _ in range(n)],
            "tier": [rng.choice(["high", "low", None]) for _ in range(n)],
            "band": [rng.randrange(3) for _ in range(n)],
        },
        schema={"query_id": pl.String, "chunk_id": pl.String, "tier": pl.String, "band": pl.Int64},
    )


@pytest.mark.parametrize("n, size", [(0, 5), (1, 5), (40, 0), (40, 7), (300, 25), (300, 1000)])
def test_samples_match_the_row_by_row_draws(n, size):
    df = _frame(n, n + size)
    order = ["query_id", "chunk_id"]
    rr = round_robin_sample(df, ["tier", "band"], order, size, seed=11)
    assert rr.schema == df.schema and rr.rows() == _draw_row_by_row(df, ["tier", "band"], order, size, 11)
    uniform = uniform_sample(df, order, size, seed=11)
    assert uniform.schema == df.schema and uniform.rows() == _lowest_keys(df, order, size, 11)
    assert rr.height == min(size, n) and uniform.height == min(size, n)
