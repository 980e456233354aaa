"""The manuscript tables mark the best in bold and every entry tied with it with a dagger, an exact tie of the
means included (the mamabench mcq track: equal accuracies over one item, which no test can separate)."""

from __future__ import annotations

from mama_pipeline.common.manuscript_export import BEST, TIED_WITH_BEST, best_and_tied
from mama_pipeline.leaderboard._leaderboard_files import manuscript_files


def test_best_is_the_first_highest_mean_and_ties_come_from_the_test_or_an_equal_mean():
    assert best_and_tied([0.5, 0.5, 0.25, None], [False, False, False, False]) == {0: BEST, 1: TIED_WITH_BEST}
    assert best_and_tied([0.5, 0.4, 0.25], [False, True, False]) == {0: BEST, 1: TIED_WITH_BEST}
    assert best_and_tied([0.25, 0.75], [False, False]) == {1: BEST}  # the best need not be listed first
    assert best_and_tied([None, None], [False, False]) == {}


def _entry(name: str, mean: float, standing: str, position: int) -> dict:
    figure = {"mean": mean, "ci_low": None, "ci_high": None, "n": 1, "standing": standing, "position": position}
    return {
        "entry_id": f"configured/{name}",
        "name": name,
        "source": "configured",
        "figures": {
            "accuracy": figure | {"ci_note": "interval: 1 value, fewer than the 30 a bootstrap interval needs"}
        },
    }


def test_an_entry_equal_to_the_best_on_the_mamabench_mcq_track_is_daggered():
    track = {
        "track": "mcq",
        "unit": "items",
        "headline": "accuracy",
        "measures": ["accuracy"],
        "entries": [
            _entry("closed", 1.0, "best", 1),
            _entry("rag", 1.0, "not compared with best", 2),  # one item: too few shared to test
            _entry("tiny", 0.0, "not compared with best", 3),
        ],
    }
    doc = {"benchmark": "mamabench", "statistics": "BCa bootstrap, Holm", "measure_labels": {}, "tracks": [track]}
    tex = manuscript_files(doc)["manuscript/mamabench_mcq.tex"].decode()
    assert "\\textbf{closed}" in tex and "\\textbf{1.000 (no interval\\textsuperscript{1})}" in tex
    assert "rag\\textsuperscript{\\dag}" in tex and "\\textbf{rag}" not in tex
    assert "tiny\\textsuperscript" not in tex and "\\textbf{tiny}" not in tex
    assert "multiple choice track" in tex and "mcq track" not in tex  # the reader's name of the track
    # the refusal once, in the caption, with its count (three entries, one measure)
    assert tex.count("fewer than the 30") == 1 and "interval refused for 3 cells: fewer than the 30 values" in tex
