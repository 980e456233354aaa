"""Adjudication orders: seeded and reproducible, rounds of at most one pair per arm, learning runs find more."""

import numpy as np
import polars as pl
import pytest

from mama_pipeline.judging._adjudication_order import (
    METHODS,
    NO_LABEL,
    NOT_RELEVANT,
    RELEVANT,
    adjudicate,
    run_lists,
)


def _pool(queries: int, seed: int = 0):
    """Two runs per query ranking 10 chunks each: ``good`` has its relevant chunks on top, ``bad`` none."""
    rng = np.random.default_rng(seed)
    rows, rel = [], {}
    for q in range(queries):
        for k in range(10):
            good, bad = f"g{q}_{k}", f"b{q}_{k}"
            rows += [(f"q{q}", "good", k + 1, good), (f"q{q}", "bad", k + 1, bad)]
            rel[(f"q{q}", good)] = int(k < 3 and rng.random() < 0.9)
            rel[(f"q{q}", bad)] = 0
    ranked = pl.DataFrame(rows, schema=["query_id", "retriever", "rank", "chunk_id"], orient="row")
    pool = ranked.select("query_id", "chunk_id").unique().sort("query_id", "chunk_id")
    truth = np.array([rel[(q, c)] for q, c in pool.iter_rows()])
    return pool, ranked, truth


def _oracle(truth):
    return lambda idx: np.where(truth[idx] == 1, RELEVANT, NOT_RELEVANT)


@pytest.mark.parametrize("method", ["pool", "random", "mtf", "mmns", "fusion"])
def test_same_seed_same_order_and_budget_respected(method):
    pool, ranked, truth = _pool(30)
    lists = run_lists(pool, ranked)
    a = adjudicate(lists, method, _oracle(truth), 200, 16, seed=7)
    b = adjudicate(lists, method, _oracle(truth), 200, 16, seed=7)
    assert np.array_equal(a.order, b.order) and a.order.size == 200 and np.unique(a.order).size == 200
    assert a.stopped == "budget of 200 pairs reached" and a.rounds.max() == 200 // 16  # 12 full rounds + 8 pairs
    whole = adjudicate(lists, method, _oracle(truth), pool.height, 16, seed=7)
    assert sorted(whole.order.tolist()) == list(range(pool.height)) and whole.stopped == "every pooled pair judged"


def test_pool_order_is_the_pool_and_random_is_seeded():
    pool, ranked, truth = _pool(5)
    lists = run_lists(pool, ranked)
    assert adjudicate(lists, "pool", _oracle(truth), 100, 7, 1).order.tolist() == list(range(100))
    r1, r2 = (adjudicate(lists, "random", _oracle(truth), 100, 7, s).order for s in (1, 2))
    assert sorted(r1) == list(range(100)) and not np.array_equal(r1, r2)


def test_a_round_takes_at_most_one_pair_per_arm():
    pool, ranked, truth = _pool(3)  # 6 arms
    done = adjudicate(run_lists(pool, ranked), "mmns", _oracle(truth), 60, 1000, 3)
    assert np.bincount(done.rounds).max() <= 6 and done.order.size == 60


@pytest.mark.parametrize("method", ["mtf", "mmns", "fusion"])
def test_learning_orders_find_the_relevant_pairs_first(method):
    pool, ranked, truth = _pool(40)
    lists = run_lists(pool, ranked)
    budget = int(truth.sum()) * 2  # 2 judgments per relevant pair, 15% of the pool
    found = {m: truth[adjudicate(lists, m, _oracle(truth), budget, 8, 5).order].sum() for m in (method, "random")}
    assert found[method] >= 0.75 * truth.sum() and found[method] > 2 * found["random"]


def test_stop_yield_stops_after_a_poor_round():
    pool, ranked, truth = _pool(20)
    done = adjudicate(run_lists(pool, ranked), "mmns", _oracle(truth), pool.height, 10, 5, stop_yield=0.05)
    assert done.order.size < pool.height and done.stopped.startswith("round ")
    last = done.labels[done.rounds == done.rounds.max()]
    assert (last == RELEVANT).mean() < 0.05


def test_unlabelled_pairs_teach_nothing_and_unranked_pairs_are_judged():
    pool, ranked, truth = _pool(4)
    extra = pl.DataFrame({"query_id": ["q0"], "chunk_id": ["seed"]})
    pool = pl.concat([pool, extra]).sort("query_id", "chunk_id")  # a pair no run ranked
    done = adjudicate(run_lists(pool, ranked), "mmns", lambda idx: np.full(idx.size, NO_LABEL), pool.height, 4, 1)
    assert sorted(done.order.tolist()) == list(range(pool.height)) and (done.labels == NO_LABEL).all()


def test_unknown_method_is_refused():
    pool, ranked, truth = _pool(2)
    with pytest.raises(ValueError, match="not one of"):
        adjudicate(run_lists(pool, ranked), "thompson", _oracle(truth), 5, 2, 1)


def _shared_pool(queries: int, seed: int = 0):
    """Three runs per query ranking 10 chunks each from one query's 20: the relevant ones (s0-s3) are ranked by
    every run, at random ranks; each run fills its other ranks with its own non-relevant chunks."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        for run in ("a", "b", "c"):
            chunks = [f"s{i}" for i in range(4)] + [f"{run}{i}" for i in range(6)]
            for rank, c in enumerate(rng.permutation(chunks), start=1):
                rows.append((f"q{q}", run, rank, str(c)))
    ranked = pl.DataFrame(rows, schema=["query_id", "retriever", "rank", "chunk_id"], orient="row")
    pool = ranked.select("query_id", "chunk_id").unique().sort("query_id", "chunk_id")
    truth = pool["chunk_id"].str.starts_with("s").cast(pl.Int8).to_numpy()
    return pool, ranked, truth


def test_fusion_judges_first_what_every_run_ranked():
    pool, ranked, truth = _shared_pool(20)  # 22 pairs a query, 4 relevant, each ranked by all three runs
    lists = run_lists(pool, ranked)
    budget = int(truth.sum())
    found = {m: truth[adjudicate(lists, m, _oracle(truth), budget, 8, 5).order].sum() for m in METHODS}
    assert found["fusion"] == truth.sum()  # the overlap alone tells them apart
    assert max(found[m] for m in ("random", "mtf", "mmns")) < 0.8 * truth.sum()


def test_fusion_rounds_take_the_highest_priorities_and_learn_the_query_yield():
    pool, ranked, truth = _shared_pool(4)
    done = adjudicate(run_lists(pool, ranked), "fusion", _oracle(truth), 16, 16, 1)
    assert done.rounds.max() == 0 and truth[done.order].sum() == 16  # one round: every shared chunk of 4 queries
    dead = np.zeros_like(truth)  # nothing relevant in q0: its pairs fall behind the other queries' after a round
    dead[pool["query_id"].to_numpy() != "q0"] = truth[pool["query_id"].to_numpy() != "q0"]
    order = adjudicate(run_lists(pool, ranked), "fusion", _oracle(dead), 40, 8, 1).order
    q = pool["query_id"].to_numpy()[order]
    assert (q[8:16] != "q0").all()
