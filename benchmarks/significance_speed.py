"""scipy's BCa bootstrap and permutation test against evaluation.significance's O(n) versions, side by side.

One pair of retrievers with 0/1 values (hit rates) and one graded measure, 5,000 resamples, at 3,162 queries
(the paper) and 31,256 (ten times). Each row: scipy's call as the pipeline made it before (same batch, same
seed), the new function, seconds each (the best of ``--repeats`` calls: a shared machine only adds time), the
ratio, and whether the two give the same figure (to 1e-12). State the load average (printed first and last).

    .venv/bin/python benchmarks/significance_speed.py [--sizes 3162 31256] [--resamples 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import stats

from mama_pipeline.evaluation._significance import (
    batch_for,
    bootstrap_mean_ci,
    compact,
    paired_bootstrap_ci,
    paired_randomization_p,
)


def _diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def scipy_paired_bca(a, b, resamples, seed):
    ci = stats.bootstrap(
        (compact(a), compact(b)),
        _diff,
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        method="BCa",
        batch=batch_for(a.size),
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return ci.low, ci.high


def scipy_mean_bca(values, resamples, seed):
    ci = stats.bootstrap(
        (compact(values),),
        np.mean,
        vectorized=True,
        n_resamples=resamples,
        method="BCa",
        batch=batch_for(values.size),
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return ci.low, ci.high


def scipy_permutation(a, b, resamples, seed):
    return stats.permutation_test(
        (compact(a), compact(b)),
        _diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=batch_for(a.size),
        rng=np.random.default_rng(seed),
    ).pvalue


def timed(repeats, fn, *args):
    """(best wall seconds of ``repeats`` calls, the result)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3_162, 31_256])
    parser.add_argument("--resamples", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"{'n':>7}  {'procedure':<36} {'scipy s':>9} {'new s':>8} {'ratio':>7}  same figure")
    for n in args.sizes:
        rng = np.random.default_rng(n)
        a = (rng.random(n) < 0.42).astype(float)
        b = np.where(rng.random(n) < 0.15, 1 - a, a)
        graded = rng.choice([0.0, 1 / 3, 2 / 3, 1.0], n)
        rows = [
            ("paired BCa of mean(a - b), 0/1", scipy_paired_bca, paired_bootstrap_ci, (a, b)),
            ("BCa of a mean, graded", scipy_mean_bca, bootstrap_mean_ci, (graded,)),
            ("paired randomization (sign flips), 0/1", scipy_permutation, paired_randomization_p, (a, b)),
        ]
        for name, old, new, data in rows:
            old_s, old_out = timed(args.repeats, old, *data, args.resamples, 0)
            new_s, new_out = timed(args.repeats, new, *data, args.resamples, 0)
            same = bool(np.allclose(old_out, new_out, rtol=0, atol=1e-12))
            print(f"{n:>7}  {name:<36} {old_s:>9.2f} {new_s:>8.2f} {old_s / new_s:>6.1f}x  {same}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
