"""The order in which pooled pairs are judged: static orders and adaptive adjudication over the contributing runs.

Each (query, run) is an arm holding the run's pooled chunks for the query in rank order (a pooled pair no run
ranked, a seed chunk, sits in the query's own ``(unranked)`` arm). Judging goes in rounds: a round takes at most
one pair per arm, its next unjudged one, from the arms with the highest priority, and sends them all at once (the
judge's concurrency is kept); the labels update the priorities before the next round.

- ``pool``: query id, then chunk id (what ``full`` judges); ``random``: a seeded shuffle. Neither learns.
- ``mtf``: move-to-front (Cormack, Palmer & Clarke 1998): an arm keeps its place while its pairs are relevant and
  goes behind the others on a non-relevant one (priority = minus its misses, earlier miss first).
- ``fusion``: fusion-prioritised (judging/_fusion_priority.py): a pair's priority fuses every run that ranked it
  (reciprocal-rank fusion, then a logistic regression of the labels on the runs' ranks), rescaled by its query's
  yield so far; a round takes the pairs of highest priority, any number per arm.
- ``mmns``: the maximum-mean Bayesian bandit, non-stationary (after Losada, Parapar & Barreiro 2017): an arm's
  priority is the mean of Beta(1 + relevant, 1 + non-relevant), the counts of the judged pairs it ranked, each
  earlier judgment weighted ``discount`` per later one, so the estimate follows the run's precision down its ranks.

Ties go to the better rank, then to a seeded random key: the same pool, settings and labels give the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from mama_pipeline.judging._fusion_priority import fusion_state, learn, priorities

METHODS = ("pool", "random", "mtf", "mmns", "fusion")
UNRANKED = "(unranked)"
RELEVANT, NOT_RELEVANT, NO_LABEL = 1, 0, -1  # what the judge callback says of each pair


@dataclass(frozen=True)
class RunLists:
    """Every arm's pairs in rank order, flattened: entry i is pair ``pair[i]`` at ``rank[i]`` of arm ``arm[i]``."""

    n_pairs: int
    pair: np.ndarray
    arm: np.ndarray
    rank: np.ndarray
    start: np.ndarray  # first entry of each arm
    length: np.ndarray  # entries of each arm
    run: np.ndarray  # the run (retriever, or the unranked arm) of each entry, numbered
    query: np.ndarray  # the query of each pair, numbered


def run_lists(pairs: pl.DataFrame, ranked: pl.DataFrame) -> RunLists:
    """Arms of ``pairs`` (query_id, chunk_id; pair i is row i) from ``ranked`` (query_id, retriever, rank,
    chunk_id): rows of pairs outside ``pairs`` are ignored; pairs no row ranks form their query's unranked arm."""
    index = pairs.select("query_id", "chunk_id").with_row_index("pair")
    hits = ranked.select("query_id", "retriever", "rank", "chunk_id").join(index, on=["query_id", "chunk_id"])
    hits = hits.group_by("query_id", "retriever", "pair").agg(pl.col("rank").min())
    unranked = index.join(hits.select("pair").unique(), on="pair", how="anti").select(
        "query_id",
        retriever=pl.lit(UNRANKED),
        pair="pair",
        rank=pl.col("chunk_id").rank("ordinal").over("query_id").cast(hits.schema["rank"]),
    )
    flat = pl.concat([hits, unranked], how="diagonal_relaxed").sort("query_id", "retriever", "rank", "pair")
    arm = flat.select(pl.struct("query_id", "retriever").rank("dense") - 1).to_series().to_numpy().astype(np.int64)
    n_arms = int(arm.max()) + 1 if arm.size else 0
    length = np.bincount(arm, minlength=n_arms)
    return RunLists(
        n_pairs=pairs.height,
        pair=flat["pair"].to_numpy().astype(np.int64),
        arm=arm,
        rank=flat["rank"].to_numpy().astype(np.int64),
        start=np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64),
        length=length,
        run=(flat["retriever"].rank("dense") - 1).to_numpy().astype(np.int64),
        query=(index["query_id"].rank("dense") - 1).to_numpy().astype(np.int64),
    )


@dataclass
class Adjudication:
    """The judged pairs in judgment order, the round of each, their labels, and why judging stopped."""

    order: np.ndarray
    rounds: np.ndarray
    labels: np.ndarray  # RELEVANT, NOT_RELEVANT or NO_LABEL per pair of ``order``
    stopped: str


def adjudicate(
    lists: RunLists,
    method: str,
    judge: Callable[[np.ndarray], np.ndarray],
    budget: int,
    round_pairs: int,
    seed: int,
    stop_yield: float | None = None,
    discount: float = 0.9,
) -> Adjudication:
    """Judge pairs of ``lists`` in ``method``'s order, ``round_pairs`` a round, until ``budget`` pairs are judged,
    every pair is, or (``stop_yield``) a round finds a smaller share of relevant pairs. ``judge(pairs)`` labels
    one round's pair indices (RELEVANT, NOT_RELEVANT, NO_LABEL)."""
    if method not in METHODS:
        raise ValueError(f"adjudication method {method!r} is not one of {METHODS}")
    rng = np.random.default_rng(seed)
    n, n_arms = lists.n_pairs, lists.length.size
    tiebreak = rng.random(n)
    static = np.arange(n) if method == "pool" else rng.permutation(n)
    judged = np.zeros(n, dtype=bool)
    pointer = np.zeros(n_arms, dtype=np.int64)
    rel, nonrel = np.zeros(n_arms), np.zeros(n_arms)  # mmns: discounted counts; mtf: misses in ``nonrel``
    last_miss = np.full(n_arms, -1.0)  # mtf: when the arm last went behind the others
    fusion = fusion_state(lists.pair, lists.run, lists.rank, lists.query) if method == "fusion" else None
    order, rounds, labels = [], [], []
    budget = min(budget, n)
    done, r, stopped = 0, 0, "every pooled pair judged"
    while done < budget:
        want = min(round_pairs, budget - done)
        if method in ("pool", "random"):
            chosen = static[done : done + want]
        elif method == "fusion":
            chosen = _fused_round(priorities(fusion), judged, lists, want, tiebreak)
        else:
            chosen = _next_round(lists, judged, pointer, want, method, rel, nonrel, last_miss, tiebreak)
        if not chosen.size:
            break
        got = np.asarray(judge(chosen), dtype=np.int8)
        judged[chosen] = True
        order.append(chosen)
        rounds.append(np.full(chosen.size, r))
        labels.append(got)
        done += chosen.size
        if method == "fusion":
            learn(fusion, chosen, got == RELEVANT, got != NO_LABEL, seed)
        elif method in ("mtf", "mmns"):
            _learn(lists, chosen, got, method, rel, nonrel, last_miss, discount, r)
        r += 1
        if done >= budget and done < n:
            stopped = f"budget of {budget} pairs reached"
        elif stop_yield is not None and done < n and (got == RELEVANT).mean() < stop_yield:
            stopped = f"round {r} found {(got == RELEVANT).mean():.4f} relevant per pair, under {stop_yield}"
            break
    cat = lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, t)  # noqa: E731
    return Adjudication(cat(order, np.int64), cat(rounds, np.int64), cat(labels, np.int8), stopped)


def _fused_round(priority, judged, lists, want, tiebreak) -> np.ndarray:
    """The ``want`` unjudged pairs of highest fused priority (ties: the better best rank, then the seeded key)."""
    best = np.full(lists.n_pairs, np.iinfo(np.int64).max)
    np.minimum.at(best, lists.pair, lists.rank)
    open_ = np.flatnonzero(~judged)
    return open_[np.lexsort((tiebreak[open_], best[open_], -priority[open_]))][:want]


def _next_round(lists, judged, pointer, want, method, rel, nonrel, last_miss, tiebreak) -> np.ndarray:
    """The next round's pairs: each live arm's next unjudged pair, arms by priority, at most ``want`` pairs."""
    last = max(lists.pair.size - 1, 0)
    while True:  # move each arm's pointer past pairs judged already (through another arm)
        live = pointer < lists.length
        at = np.minimum(lists.start + pointer, last)
        blocked = live & judged[lists.pair[at]] if lists.pair.size else live
        if not blocked.any():
            break
        pointer[blocked] += 1
    arms = np.flatnonzero(pointer < lists.length)
    if not arms.size:
        return np.zeros(0, np.int64)
    entry = lists.start[arms] + pointer[arms]
    pair, rank = lists.pair[entry], lists.rank[entry]
    if method == "mmns":
        keys = (tiebreak[pair], rank, -(1 + rel[arms]) / (2 + rel[arms] + nonrel[arms]))
    else:  # mtf: fewest misses first; among equals, the one that went behind first
        keys = (tiebreak[pair], rank, last_miss[arms], nonrel[arms])
    ranked = pair[np.lexsort(keys)]
    _, first = np.unique(ranked, return_index=True)  # a pair next in several arms is taken once
    return ranked[np.sort(first)][:want]


def _learn(lists, chosen, got, method, rel, nonrel, last_miss, discount, r) -> None:
    """Update the arms that ranked the round's judged pairs (a pair without a label teaches nothing)."""
    label = np.full(lists.n_pairs, NO_LABEL, dtype=np.int8)
    label[chosen] = got
    entries = np.flatnonzero(label[lists.pair] != NO_LABEL)
    arms, hit = lists.arm[entries], label[lists.pair[entries]] == RELEVANT
    if method == "mmns":
        seen = np.bincount(arms, minlength=rel.size)
        decay = discount**seen
        rel *= decay
        nonrel *= decay
        np.add.at(rel, arms, hit.astype(float))
        np.add.at(nonrel, arms, (~hit).astype(float))
    else:
        missed = np.unique(arms[~hit])
        np.add.at(nonrel, arms[~hit], 1.0)
        last_miss[missed] = r
