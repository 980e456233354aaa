"""Invariants and failure bounds the release writers enforce."""
from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.llm.failure_bounds import (
    FailureBoundError,
    classifier_failures,
    judge_failures,
    query_writer_failures,
    refuse_over_bound,
)
from mama_pipeline.release.mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline_tests.release import fixtures as fx


@pytest.mark.parametrize("dim", ["d2_meaningful", "d3_actionable", "d4_density"])
def test_labels_with_dimensions_set_while_d1_is_false_are_refused_with_the_row_named(tmp_path, dim):
    j = fx.judgments()
    gated = j.filter(~pl.col("d1_topic")).row(0, named=True)
    bad = j.with_columns(
        pl.when((pl.col("query_id") == gated["query_id"]) & (pl.col("chunk_id") == gated["chunk_id"]))
        .then(pl.lit(1, pl.Int8)).otherwise(pl.col(dim)).alias(dim)
    )
    with pytest.raises(ReleaseError) as err:
        write_mamaretrieval_release(tmp_path / "r", fx.inputs(judgments=bad))
    msg = str(err.value)
    assert "1 label(s) set D2..D4 while D1 is false" in msg and f"{dim}=1" in msg
    assert f"query_id={gated['query_id']}, chunk_id={gated['chunk_id']}" in msg
    assert not (tmp_path / "r").exists()
    write_mamaretrieval_release(tmp_path / "ok", fx.inputs(judgments=j))  # the gated labels as the judge writes them


def test_the_benchmark_synthetic_judgments_respect_the_d1_gate(tmp_path):
    from benchmarks.release_build import synthetic_inputs

    inputs = synthetic_inputs(0.01)
    write_mamaretrieval_release(tmp_path / "bench", inputs)
    gated = inputs.judgments.filter(~pl.col("d1_topic"))
    assert gated.height and gated.select(pl.col("d2_meaningful", "d3_actionable", "d4_density").is_null().all()).row(0) \
        == (True, True, True)


def test_stage_failure_counts_and_refusal_name_the_stage_and_the_counts():
    pool = pl.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "chunk_id": ["a", "b", "a", "c"]})
    labelled = pool.head(3)
    judge = judge_failures(pool, labelled, bound=0.2)
    assert (judge.failed, judge.total, judge.over) == (1, 4, True)
    writer = query_writer_failures(pl.DataFrame({"status": ["kept", "llm_failed", "not_answerable", "kept"]}), 0.5)
    assert (writer.failed, writer.total, writer.over) == (1, 4, False)
    verdicts = pl.DataFrame({"via": ["classifier", "classifier", "oss_eval"], "status": ["ok", "parse_failed", "x"]})
    classifier = classifier_failures(verdicts, 0.5)
    assert (classifier.failed, classifier.total, classifier.over) == (1, 2, False)
    refuse_over_bound("mamaretrieval", "1.0", [writer, classifier])  # at or under their bounds: no refusal
    with pytest.raises(FailureBoundError) as err:
        refuse_over_bound("mamaretrieval", "1.0", [writer, judge])
    assert str(err.value).startswith("release mamaretrieval 1.0 refused: stage judge: 1 of 4 pooled pairs failed "
                                     "(25.00%), bound 20.00% (llm.judge.max_failure_rate)")
    assert "query_writer" not in str(err.value)
