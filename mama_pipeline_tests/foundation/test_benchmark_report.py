"""benchmarks/paper_multiple.py's split of step time by whether a step called the test server, and its growth
table between two multiples."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def pm():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import paper_multiple

        yield paper_multiple
    finally:
        sys.path.remove(str(BENCHMARKS))


def result(pm, multiple: float, steps: list[tuple[str, float, int, float]]):
    return pm.Result(
        multiple=multiple,
        chunks=0,
        wall=0.0,
        steps={k: pm.Step(k, runs=1, wall=w, http_calls=n, client_wall=c) for k, w, n, c in steps},
        counts={},
        tree_peak=0,
        largest_peak=0,
        orchestration_peak=0,
        judge_calls=0,
        judge_client_wall=0.0,
        loads=([], (0, 0, 0), (0, 0, 0)),
        server_peak=0,
    )


def test_a_step_with_recorded_calls_counts_as_calling_the_server(pm):
    r = result(pm, 1, [("judged_labels", 300.0, 1000, 290.0), ("scoreboard", 10.0, 0, 0.0), ("x", 2.5, 0, 0.0)])
    assert pm.server_split(r) == (1, 300.0, 290.0, 2, 12.5)


def test_growth_prints_each_step_and_both_sums(pm, capsys):
    one = result(pm, 1, [("judged_labels", 300.0, 1000, 290.0), ("scoreboard", 10.0, 0, 0.0)])
    ten = result(pm, 10, [("judged_labels", 3000.0, 10000, 2900.0), ("scoreboard", 115.0, 0, 0.0), ("new", 1.0, 0, 0)])
    pm.growth([one, ten], ["judged_labels", "scoreboard", "new"])
    out = capsys.readouterr().out
    assert "N = 1 -> N = 10 (x10 the work)" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert lines["judged_labels"].rstrip().endswith("x 10.0  calls the test server")
    assert lines["scoreboard"].rstrip().endswith("x 11.5")
    assert "new" not in lines  # a step of one multiple only has no growth
    zero = result(pm, 1, [("scoreboard", 0.0, 0, 0.0)])
    pm.growth([zero, ten], ["scoreboard"])
    assert capsys.readouterr().out.splitlines()[2].split()[-1] == "-"  # no ratio over 0 s
    # the sums are over every step of each run: the other steps at N = 10 are scoreboard and new, 115 + 1 s
    assert [line.split()[-4:] for line in out.splitlines() if line.startswith("the other steps")] == [
        "116.0 s x 11.6".split()
    ]
