"""Agreement of the LLM judges with clinicians, checked against figures worked out by hand (see fixtures)."""

import polars as pl
import pytest

from mama_pipeline.clinician._adjudication import majority_labels
from mama_pipeline.clinician._annotations import latest_per_annotator, parse_export
from mama_pipeline.clinician._clinician_agreement import relevance_agreement, scope_agreement
from mama_pipeline_tests.clinician import fixtures as fx


def _labels() -> pl.DataFrame:
    ids = {"one": 11, "two": 12}
    frames = [parse_export(fx.export_file_tasks(k, ids), f"{k}.json") for k in ("relevance", "scope")]
    return latest_per_annotator(pl.concat(frames))[0]


def _figures(metrics: pl.DataFrame, comparison: str) -> dict[str, float]:
    return dict(metrics.filter(pl.col("comparison") == comparison).select("metric", "value").iter_rows())


def test_majority_lists_ties_and_decides_the_rest():
    majority = majority_labels(_labels(), min_annotations=2)
    rel = {r["task_key"]: r for r in majority.filter(pl.col("kind") == "relevance").to_dicts()}
    keys = [f"relevance:{q}:{c}" for q, c in fx.PAIRS]
    assert rel[keys[0]]["tie"] and rel[keys[0]]["tied_on"] == "d4_density"  # D4 2 vs 1
    assert (rel[keys[1]]["tie"], rel[keys[1]]["score"]) == (False, 2)
    assert rel[keys[2]]["tie"] and rel[keys[2]]["tied_on"] == "d1_topic"  # off topic vs on topic
    assert (rel[keys[3]]["tie"], rel[keys[3]]["score"]) == (False, 4)
    scope = {r["item_id"]: (r["tie"], r["category"]) for r in majority.filter(pl.col("kind") == "scope").to_dicts()}
    assert scope == {"mb-1": (False, "MATERNAL"), "mb-2": (True, None), "mb-3": (False, "CHILD_HEALTH")}
    assert majority_labels(_labels(), min_annotations=3).is_empty()


def test_relevance_agreement_matches_hand_computed_figures():
    from sklearn.metrics import cohen_kappa_score  # heavy: imported by the test that uses it, not at collection

    labels = _labels()
    metrics, confusion = relevance_agreement(fx.judgments_frame(), labels, majority_labels(labels, 2), 3, 5)
    one = _figures(metrics, "annotator 11")  # judge 6,3,0,3 vs clinician 6,2,0,4
    assert one["exact_score_agreement"] == 0.5 and one["within_one_point"] == 1.0
    assert one["lenient_agreement"] == 0.75 and one["strict_agreement"] == 1.0
    assert one["d1_topic_agreement"] == 1.0 and one["d2_meaningful_agreement"] == 1.0
    assert one["d3_actionable_agreement"] == 1.0 and one["d4_density_agreement"] == pytest.approx(1 / 3)
    two = _figures(metrics, "annotator 12")  # judge 6,3,0,3 vs clinician 5,2,1,4
    assert two["exact_score_agreement"] == 0.0 and two["within_one_point"] == 1.0
    assert two["lenient_agreement"] == 0.75 and two["strict_agreement"] == 1.0
    assert two["d1_topic_agreement"] == 0.75 and two["d4_density_agreement"] == 0.0
    maj = _figures(metrics, "majority")  # two decided pairs: judge 3,3 vs majority 2,4
    assert maj["exact_score_agreement"] == 0.0 and maj["within_one_point"] == 1.0
    assert maj["lenient_agreement"] == 0.5 and maj["strict_agreement"] == 1.0
    # weighted kappa against an independent implementation over the same 0..6 scale
    for name, clin in (("annotator 11", [6, 2, 0, 4]), ("annotator 12", [5, 2, 1, 4])):
        for w in ("linear", "quadratic"):
            expected = cohen_kappa_score([6, 3, 0, 3], clin, labels=list(range(7)), weights=w)
            assert _figures(metrics, name)[f"weighted_kappa_{w}"] == pytest.approx(expected)
    alphas = _figures(metrics, "annotators")
    # D1: values T,T,F,T / T,T,T,T: D_o = 2/8, D_e = 2*7*1/(8*7) = 2/8, alpha = 0
    assert alphas["krippendorff_alpha_d1_topic"] == pytest.approx(0.0)
    assert -1.0 <= alphas["krippendorff_alpha_score"] <= 1.0
    cell = confusion.filter(
        (pl.col("comparison") == "annotator 11") & (pl.col("llm") == "3") & (pl.col("clinician") == "4")
    )
    assert cell["count"].to_list() == [1]
    assert confusion.filter(pl.col("comparison") == "annotator 11")["count"].sum() == 4


def test_scope_agreement_matches_hand_computed_figures():
    labels = _labels()
    metrics, confusion = scope_agreement(fx.verdicts_frame(), labels, majority_labels(labels, 2))
    one, two, maj = (_figures(metrics, n) for n in ("annotator 11", "annotator 12", "majority"))
    assert one["category_agreement"] == pytest.approx(2 / 3) and one["in_scope_agreement"] == 1.0
    assert one["cohens_kappa"] == pytest.approx(4 / 7)  # p_o 2/3, p_e 2/9
    assert two["category_agreement"] == pytest.approx(1 / 3) and two["in_scope_agreement"] == pytest.approx(2 / 3)
    assert maj["category_agreement"] == 0.5  # mb-2 tied; mb-1 agrees, mb-3 does not
    # clinicians: (M,M) (N,M) (CH,CH): D_o = 2/6, D_e = 2*(3*1+3*2+1*2)/(6*5) = 22/30, alpha = 12/22
    assert _figures(metrics, "annotators")["krippendorff_alpha_category"] == pytest.approx(12 / 22)
    row = confusion.filter((pl.col("comparison") == "annotator 11") & (pl.col("llm") == "NEONATAL"))
    assert row.select("clinician", "count").rows() == [("CHILD_HEALTH", 1)]


def test_undefined_figures_are_null_not_perfect():
    labels = _labels().filter(pl.col("annotator_id") == "11")
    metrics, _ = scope_agreement(fx.verdicts_frame(), labels, majority_labels(labels, 2))
    alpha = _figures(metrics, "annotators")["krippendorff_alpha_category"]
    assert alpha is None  # one clinician: no unit coded twice
    assert _figures(metrics, "majority")["category_agreement"] is None


def test_nothing_labelled_yet_gives_empty_figures_not_errors():
    from mama_pipeline.clinician._annotations import parse_export

    none = parse_export([], "empty.json")
    majority = majority_labels(none, 2)
    metrics, confusion = relevance_agreement(fx.judgments_frame(), none, majority, 3, 5)
    assert set(metrics["comparison"]) == {"majority", "annotators"} and metrics["value"].is_null().all()
    assert confusion["count"].sum() == 0
    metrics, _ = scope_agreement(fx.verdicts_frame(), none, majority)
    assert metrics["value"].is_null().all()
