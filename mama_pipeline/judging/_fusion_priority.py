"""Fusion-prioritised judging: the overlap between runs as the signal for which pair to judge next.

Before any label, a pair's priority is its reciprocal-rank fusion over the runs that ranked it, sum 1 / (60 +
rank) (Cormack, Clarke & Buettcher 2009): a chunk several runs rank high comes first. Once the judged pairs hold
both labels, a logistic regression (scikit-learn) on them learns each run's weight: per run, whether it ranked
the pair and the log of its rank, fitted jointly so that runs that agree are not counted twice (the runs'
weights follow the labels, as in Hedge, Aslam, Pavlu & Savell 2003). Its query's yield so far rescales the
fitted chance, (relevant + 2) / (expected + 2) over the query's labelled pairs (expected: the sum of their fitted
chances), so a query whose judged pairs disappoint falls back. A round takes the unjudged pairs of highest
priority, any number per query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RRF_K = 60  # reciprocal-rank fusion's constant
PRIOR_PAIRS = 2.0  # pseudo-pairs behind each query's yield factor
REFIT_GROWTH = 1.25  # the regression is refitted once the labelled pairs have grown by this factor


@dataclass
class FusionState:
    """Each pair's features and query, and what the judged pairs taught."""

    features: np.ndarray  # pair x (ranked by run s, log rank in run s) for every run
    rrf: np.ndarray  # pair: reciprocal-rank fusion score
    query: np.ndarray  # pair: its query, numbered
    chance: np.ndarray | None = field(init=False, default=None)  # pair: the fitted chance, once fitted
    fitted_on: int = field(init=False, default=0)  # labelled pairs at the last fit
    relevant: np.ndarray = field(init=False)  # pair: 1 relevant, 0 not, -1 not (yet) labelled

    def __post_init__(self) -> None:
        self.relevant = np.full(self.query.size, -1, dtype=np.int8)


def fusion_state(entry_pair, entry_run, entry_rank, pair_query) -> FusionState:
    """Features of every pair from the runs' entries (``entry_pair[i]`` is at ``entry_rank[i]`` of ``entry_run[i]``)."""
    n_pairs, n_runs = pair_query.size, int(entry_run.max(initial=-1)) + 1
    features = np.zeros((n_pairs, 2 * n_runs))
    features[entry_pair, 2 * entry_run] = 1.0
    features[entry_pair, 2 * entry_run + 1] = np.log(entry_rank)
    rrf = np.bincount(entry_pair, weights=1.0 / (RRF_K + entry_rank), minlength=n_pairs)
    return FusionState(features, rrf, pair_query)


def priorities(state: FusionState) -> np.ndarray:
    """Each pair's priority: the reciprocal-rank fusion until a fit exists, then the fitted chance times its
    query's yield factor."""
    if state.chance is None:
        return state.rrf
    seen = state.relevant >= 0
    n = int(state.query.max(initial=-1)) + 1
    found = np.bincount(state.query[seen], weights=state.relevant[seen].astype(float), minlength=n)
    expected = np.bincount(state.query[seen], weights=state.chance[seen], minlength=n)
    return state.chance * ((found + PRIOR_PAIRS) / (expected + PRIOR_PAIRS))[state.query]


def learn(state: FusionState, chosen: np.ndarray, relevant: np.ndarray, labelled: np.ndarray, seed: int) -> None:
    """Record the round's labels (``relevant``/``labelled``: per chosen pair); refit the chances on every
    labelled pair once both labels occur and the labelled pairs have grown by ``REFIT_GROWTH`` since the last fit
    (the yield factors follow every round)."""
    from sklearn.linear_model import LogisticRegression

    state.relevant[chosen[labelled]] = relevant[labelled]
    seen = state.relevant >= 0
    if np.unique(state.relevant[seen]).size == 2 and seen.sum() >= REFIT_GROWTH * state.fitted_on:
        state.fitted_on = int(seen.sum())
        model = LogisticRegression(max_iter=500, random_state=seed).fit(state.features[seen], state.relevant[seen])
        state.chance = model.predict_proba(state.features)[:, 1]
