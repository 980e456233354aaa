"""One real call per track through the embedded SmolLM2-135M: answers and both graders.

The model's answers are not meaningful; the test checks that each track's request
reaches a real llama.cpp server and comes back as an answer or a listed failure.
The system stops at its first full stop (a server-side ``stop``): an answer cut at
``max_tokens`` would be invalid and never reach the graders.
"""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.systems.fixtures import mcq, rubric, short
from mama_pipeline_tests.systems.test_assets import CRITERIA, materialise

ITEMS = [
    mcq("m1", "Which drug prevents eclamptic seizures?", ["oxytocin", "magnesium sulfate", "aspirin", "iron"], 1),
    short(
        "s1",
        "A newborn feels cold after birth. What should the midwife do first?",
        "Dry the baby and place it skin-to-skin with the mother, head covered.",
    ),
    rubric("r1", "How do I keep my newborn warm at home?", [(CRITERIA[0], 5)]),
]


@pytest.mark.slow
def test_embedded_model_answers_and_grades_every_track(tmp_path):
    # a loaded 2-core machine can take minutes per answer; the smoke model's graders often break their JSON, and
    # this test checks the path, not the figures: no failure bound refuses them here
    patient = {"timeout_s": 1200, "max_retries": 0, "max_failure_rate": 1.0}
    config = tmp_path / "config.yaml"
    config.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "llm": {
                        "embedded_server": {"n_parallel": 2, "n_ctx": 8192},
                        "answer_grader": {"max_tokens": 64, **patient},
                        "rubric_judge": {"max_tokens": 64, **patient},
                    },
                    "systems": {
                        "entries": [{"name": "smollm", "max_tokens": 64, "extra_body": {"stop": ["."]}, **patient}],
                        "resamples": 100,
                    },
                }
            )
        )
    )
    names = ["smollm"]
    materialise(
        str(config),
        ITEMS,
        names,
        "mamabench_items mamabench_criteria corpus_chunks calibration_harness_report systems_items",
    )
    result = materialise(str(config), ITEMS, names, "system_answers system_grades", "smollm")
    store = Store(tmp_path / "data" / "mama.duckdb")
    answers = store.read_table("system_answers")
    assert sorted(answers["track"]) == ["mcq", "rubric", "short_answer"]
    assert (answers["status"] == "ok").all(), answers.select("item_id", "status", "error").rows()
    assert answers.filter(pl.col("track") == "mcq")["answer"][0] in "ABCD"  # the JSON schema held the letter
    grades = store.read_table("system_grades")
    assert sorted(grades["track"]) == ["mcq", "rubric", "short_answer"]
    for row in grades.iter_rows(named=True):  # graded, or a failure with its reason, never a silent gap
        assert row["status"] == "graded" or row["error"], row
    meta = {
        k: v.value for ev in result.get_asset_materialization_events() for k, v in ev.materialization.metadata.items()
    }
    assert meta["answer_grader/http_calls"] >= 1 and meta["rubric_judge/http_calls"] >= 1
    assert "smoke-test model" in meta["rubric_judge/note"]
