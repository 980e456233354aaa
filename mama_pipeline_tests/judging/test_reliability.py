"""Judge agreement statistics on a hand-worked example, and the seeded stratified pilot."""

import numpy as np
import polars as pl
import pytest

from mama_pipeline.judging._label_score import score_verdicts
from mama_pipeline.judging._reliability import agreement, pilot_sample, reference_audits

# (d1, d2, d3, d4) of the main and the reference judge on six pairs
MAIN = [(True, 2, 2, 2), (True, 1, 1, 1), (False, 0, 0, 0), (True, 2, 1, 2), (True, 1, 0, 0), (True, 2, 2, 1)]
REF = [(True, 2, 2, 2), (True, 1, 1, 0), (False, 0, 0, 0), (True, 1, 1, 1), (False, 0, 0, 0), (True, 2, 2, 2)]
# scores: main 6, 3, 0, 5, 1, 5 ; reference 6, 2, 0, 3, 0, 6


def labels(rows):
    out = []
    for i, (d1, d2, d3, d4) in enumerate(rows):
        lab = score_verdicts({"d1_topic": d1, "d2_meaningful": d2, "d3_actionable": d3, "d4_density": d4})
        out.append({"query_id": "q1", "chunk_id": f"c{i}", **lab})
    return pl.DataFrame(out)


def weighted_kappa_by_hand(a, b, power):
    k = 7
    obs = np.zeros((k, k))
    for x, y in zip(a, b):
        obs[x, y] += 1
    obs /= obs.sum()
    exp = np.outer(obs.sum(1), obs.sum(0))
    w = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) ** power
    return 1 - (w * obs).sum() / (w * exp).sum()


def test_agreement_on_hand_example():
    metrics, confusion = agreement(labels(MAIN), labels(REF), lenient=3, strict=5)
    m = dict(zip(metrics["metric"], metrics["value"]))
    # lenient (>=3): main T T F T F T, ref T F F T F T -> 5/6
    assert m["lenient_agreement"] == pytest.approx(5 / 6)
    # strict (>=5): main T F F T F T, ref T F F F F T -> 5/6
    assert m["strict_agreement"] == pytest.approx(5 / 6)
    assert m["exact_score_agreement"] == pytest.approx(2 / 6)  # pairs 0 and 2
    assert m["within_one_point"] == pytest.approx(5 / 6)  # |diffs| = 0,1,0,2,1,1
    a, b = [6, 3, 0, 5, 1, 5], [6, 2, 0, 3, 0, 6]
    assert m["weighted_kappa_linear"] == pytest.approx(weighted_kappa_by_hand(a, b, 1))
    assert m["weighted_kappa_quadratic"] == pytest.approx(weighted_kappa_by_hand(a, b, 2))
    assert m["d1_topic_agreement"] == pytest.approx(5 / 6)
    # D2..D4 over the four pairs both put on topic (0, 1, 3, 5)
    assert m["d2_meaningful_agreement"] == pytest.approx(3 / 4)
    assert m["d3_actionable_agreement"] == pytest.approx(1.0)
    assert m["d4_density_agreement"] == pytest.approx(1 / 4)
    assert dict(zip(metrics["metric"], metrics["pairs"]))["d2_meaningful_agreement"] == 4
    table = confusion.drop("main_score").to_numpy()
    assert table.sum() == 6 and table[6, 6] == 1 and table[3, 2] == 1 and table[5, 3] == 1 and table[5, 6] == 1
    assert table[1, 0] == 1 and table[0, 0] == 1


def test_agreement_only_over_pairs_both_judges_labelled():
    metrics, _ = agreement(labels(MAIN), labels(REF).head(2), lenient=3, strict=5)
    m = dict(zip(metrics["metric"], metrics["value"]))
    assert metrics["pairs"][0] == 2 and m["exact_score_agreement"] == pytest.approx(0.5)


def test_kappa_of_a_single_level_is_reported_undefined_not_a_number():
    same = labels([(False, 0, 0, 0)] * 3)
    metrics, _ = agreement(same, same, lenient=3, strict=5)
    m = dict(zip(metrics["metric"], metrics["value"]))
    assert m["exact_score_agreement"] == 1.0 and m["weighted_kappa_linear"] is None


def judged(n):
    return pl.DataFrame(
        {
            "query_id": [f"q{i // 5:03d}" for i in range(n)],
            "chunk_id": [f"c{i:04d}" for i in range(n)],
            "tier": [["high", "low"][i % 2] for i in range(n)],
            "score": [[0, 0, 0, 1, 2, 3, 4, 0, 0, 5, 6, 0][i % 12] for i in range(n)],
        }
    )


def test_pilot_sample_is_seeded_stratified_and_stable():
    df = judged(600)
    a = pilot_sample(df, 40, seed=7, lenient=3, strict=5)
    assert a.height == 40 and a.equals(pilot_sample(df.reverse(), 40, seed=7, lenient=3, strict=5))
    assert not a.equals(pilot_sample(df, 40, seed=8, lenient=3, strict=5))
    counts = a.group_by("tier", "band").len()
    assert counts.height == 8 and set(counts["len"]) == {5}  # 2 tiers x 4 bands, equal share
    assert a.filter(pl.col("band") == "strict")["score"].min() >= 5


def test_pilot_takes_everything_from_small_strata():
    df = judged(600).filter((pl.col("score") < 5) | (pl.col("chunk_id") == "c0009"))
    a = pilot_sample(df, 40, seed=7, lenient=3, strict=5)
    assert a.height == 40 and a.filter(pl.col("band") == "strict").height == 1


def test_audits_name_the_judges_of_every_label_beside_the_compared_pairs():
    """``main`` may hold the pilot pairs alone: the judge's models and identities come from ``judges``."""
    main = labels(MAIN).with_columns(judge_model=pl.lit("judge-a"), judge_identity=pl.lit("http://a|judge-a|t0"))
    reference = labels(REF).with_columns(
        judge_model=pl.lit("judge-b"),
        judge_identity=pl.lit("http://b|judge-b|t0"),
        status=pl.lit("labelled"),
        reference_stage=pl.lit("reference_judge"),
        reference_model=pl.lit("judge-b"),
    )
    metrics, _ = reference_audits(main, reference, 3, 5)
    assert metrics["audit"].unique().to_list() == ["cross_model"] and metrics["note"].null_count() == metrics.height
    # another label of the judge (not in the pilot) was made by judge-b at the reference's identity
    judges = pl.DataFrame(
        {"judge_model": ["judge-a", "judge-b"], "judge_identity": ["http://a|judge-a|t0", "http://b|judge-b|t0"]}
    )
    metrics, _ = reference_audits(main, reference, 3, 5, judges)
    assert metrics["audit"].unique().to_list() == ["self_consistency"]
    assert metrics["value"].null_count() == metrics.height
    assert "the reference judge is the judge itself (model judge-b" in metrics["note"][0]
