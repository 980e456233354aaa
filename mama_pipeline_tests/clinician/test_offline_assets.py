"""The clinician group with no server: task files out, labels from Label Studio export files, report, release configs."""

import json

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.clinician._synthetic import synthetic_export
from mama_pipeline.release import _mamaretrieval as mamaretrieval
from mama_pipeline.release._clinician_part import configurations
from mama_pipeline.release._mamaretrieval import ReleaseError
from mama_pipeline.release._track_parts import extra_configurations
from mama_pipeline.release._verify import verify_release
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.clinician import fixtures as fx
from mama_pipeline_tests.mamabench.test_release import inputs  # noqa: F401  (the mamabench release fixture)
from mama_pipeline_tests.release import fixtures as release_fx
from mama_pipeline_tests.support.llm_stages import with_embedded

CLINICIAN = [
    "clinician_tasks",
    "clinician_projects",
    "clinician_labels",
    "clinician_agreement",
    "clinician_confusion",
    "clinician_validated",
    "clinician_report",
]


def _config(tmp_path, name: str = "cfg.yaml", **clinician) -> str:
    cfg = tmp_path / name  # one file per variant: settings are cached by file and modification time
    cfg.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "clinician": {
                        "exports": {"relevance": "relevance.json", "scope": "scope.json"},
                        "relevance_sample_size": 4,
                        "scope_sample_size": 3,
                        **clinician,
                    },
                }
            )
        )
    )
    return str(cfg)


@pytest.fixture
def offline(tmp_path):
    fx.write_export(tmp_path / "relevance.json", "relevance")
    fx.write_export(tmp_path / "scope.json", "scope")
    result = dg.materialize(fx.ALL, resources=shared_resources(_config(tmp_path)))
    assert result.success
    return tmp_path, result


def test_offline_run_reads_exports_writes_task_files_and_report(offline):
    tmp_path, result = offline
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {
        "no_llm_label_in_task_data": True,
        "one_label_per_task_and_annotator": True,
        "labels_belong_to_current_sample": True,
        "estimates_follow_the_sample_size_rule": True,
    }
    data = tmp_path / "data"
    tasks = json.loads((data / "clinician" / "label_studio" / "relevance_tasks.json").read_text())
    assert len(tasks) == 4 and all(set(t) == {"data"} for t in tasks)  # Label Studio's import format
    assert (data / "clinician" / "label_studio" / "relevance_config.xml").read_text().startswith("<View>")
    export = json.loads((data / "clinician" / "exports" / "scope_export.json").read_text())
    assert export == fx.export_file_tasks("scope", {"one": 11, "two": 12})  # what was read, kept as a file
    store = Store(data / "mama.duckdb")
    labels = store.read_table("clinician_labels")
    assert labels.height == 14 and labels["source"].str.ends_with(".json").all() and not labels["synthetic"].any()
    metrics = store.read_table("clinician_agreement")
    one = dict(metrics.filter(pl.col("comparison") == "annotator 11").select("metric", "value").iter_rows())
    assert one["exact_score_agreement"] == 0.5 and one["category_agreement"] == pytest.approx(2 / 3)
    page = (data / "reports" / "clinician" / "agreement.html").read_text()
    assert "SYNTHETIC" not in page and "relevance judge vs majority" in page
    assert "scope classifier vs annotator 11" in page
    assert "4 tasks with at least 2 usable annotations, 2 ties, 0 synthetic" in page
    meta = result.asset_materializations_for_node("clinician_projects")[0].metadata
    assert meta["server"].value == "(none configured)"


def test_release_configurations_carry_the_validated_subset_into_both_releases(offline, tmp_path):
    data = offline[0] / "data"
    store = Store(data / "mama.duckdb")
    s = load_settings(offline[0] / "cfg.yaml")
    assert [c.name for c in extra_configurations("mamaretrieval", store, s)] == ["clinician_validated"]
    (rel,) = configurations("mamaretrieval", store, s)
    assert rel.frame.height == 4 and rel.frame["tie"].sum() == 2 and rel.path == "data/clinician_validated.parquet"
    assert "SYNTHETIC" not in rel.card_section and "Krippendorff" in rel.card_section
    assert "labelled by at least 2 clinicians" in rel.description and not rel.frame["synthetic"].any()
    (scope,) = configurations("mamabench", store, s)
    assert scope.frame.columns == ["item_id", "annotations", "tie", "tied_on", "category", "synthetic"]
    assert scope.frame.filter(~pl.col("tie"))["category"].to_list() == ["MATERNAL", "CHILD_HEALTH"]
    assert configurations("other", store, s) == []
    assert configurations("mamaretrieval", Store(tmp_path / "x.db"), s) == []

    folder = tmp_path / "release"
    manifest = mamaretrieval.write_mamaretrieval_release(folder, release_fx.inputs(), [rel.as_part()])
    assert manifest["configurations"]["clinician_validated"]["rows"] == 4
    assert "data/clinician_validated.parquet" in manifest["files"]
    assert pl.read_parquet(folder / rel.path).equals(rel.frame)
    card = (folder / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert {"config_name": "clinician_validated", "data_files": [{"split": "test", "path": rel.path}]} in front[
        "configs"
    ]
    assert "## Clinician validation" in card
    assert verify_release(folder).ok
    again = tmp_path / "again"
    mamaretrieval.write_mamaretrieval_release(again, release_fx.inputs(), [rel.as_part()])
    assert (again / rel.path).read_bytes() == (folder / rel.path).read_bytes()


def test_mamabench_release_gets_the_scope_subset(offline, inputs):  # noqa: F811 (the fixture)
    from mama_pipeline.release._mamabench import ReleaseInputs, release_files

    store, s = Store(offline[0] / "data" / "mama.duckdb"), load_settings(offline[0] / "cfg.yaml")
    (scope,) = configurations("mamabench", store, s)
    files = release_files(ReleaseInputs(**{**inputs.__dict__, "extra": [scope]}))
    rows = [json.loads(line) for line in files["data/clinician_validated/test.jsonl"].decode().splitlines()]
    assert [(r["item_id"], r["tie"], r["category"]) for r in rows] == [
        ("mb-1", False, "MATERNAL"),
        ("mb-2", True, None),
        ("mb-3", False, "CHILD_HEALTH"),
    ]
    card = files["README.md"].decode()
    front = yaml.safe_load(card.split("---")[1])
    assert any(c["config_name"] == "clinician_validated" for c in front["configs"])
    assert "## Clinician validation" in card and "| clinician_validated | 3 |" in card
    manifest = json.loads(files["manifests/manifest.json"])
    assert "data/clinician_validated/test.jsonl" in json.dumps(manifest)


def test_demo_mode_synthetic_annotators_are_seeded_per_task_and_announced(tmp_path):
    from mama_pipeline.clinician._synthetic import synthetic_export
    from mama_pipeline.clinician._tasks import relevance_tasks
    from mama_pipeline.clinician.settings import ClinicianSettings

    tasks = relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 4, 1, 3, 5)
    export = synthetic_export(tasks, "relevance", 2, 5)
    assert export == synthetic_export(tasks, "relevance", 2, 5) and len(export) == 4
    assert all(a["synthetic"] and a["completed_by"] in (901, 902) for t in export for a in t["annotations"])
    fewer = synthetic_export(tasks.filter(pl.col("query_id") != "q_00001"), "relevance", 2, 5)
    same = {t["data"]["task_key"]: t["annotations"][0]["result"] for t in export}
    assert all(same[t["data"]["task_key"]] == t["annotations"][0]["result"] for t in fewer)  # seeded per task
    with pytest.raises(ValueError, match="synthetic_annotators is for the offline demo"):
        ClinicianSettings(synthetic_annotators=2, label_studio_url="http://127.0.0.1:8080")

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "clinician": {"synthetic_annotators": 2, "relevance_sample_size": 4, "scope_sample_size": 3},
                }
            )
        )
    )
    assert dg.materialize(fx.ALL, resources=shared_resources(str(cfg))).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    labels = store.read_table("clinician_labels")
    assert labels.height == 14 and set(labels["annotator_id"]) == {"901", "902"}
    assert labels["source"].str.starts_with("synthetic:").all()
    assert labels["synthetic"].all()
    page = (tmp_path / "data" / "reports" / "clinician" / "agreement.html").read_text()
    assert "14 of the 14 labels are SYNTHETIC" in page
    with pytest.raises(ReleaseError, match="4 of 4 relevance tasks were adjudicated from SYNTHETIC annotations"):
        configurations("mamaretrieval", store, load_settings(cfg))


@pytest.mark.parametrize("marked", ["annotation", "task"])
def test_synthetic_labels_are_known_by_their_mark_not_their_file_name(tmp_path, marked):
    """A synthetic export renamed as a clinicians' one still says synthetic; a release takes it only when allowed,
    and then its card and rows say so."""
    from mama_pipeline.clinician._tasks import relevance_tasks, scope_tasks

    tasks = pl.concat(
        [
            relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 4, 1, 3, 5),
            scope_tasks(fx.verdicts_frame(), fx.adapted_frame(), 3, 1),
        ]
    )
    for kind in ("relevance", "scope"):
        export = synthetic_export(tasks, kind, 2, 5)
        for t in export:  # the mark on one level only
            if marked == "task":
                for a in t["annotations"]:
                    del a["synthetic"]
            else:
                del t["meta"]
        (tmp_path / f"{kind}.json").write_text(json.dumps(export))
    cfg = _config(tmp_path, min_annotations=1)
    assert dg.materialize(fx.ALL, resources=shared_resources(cfg)).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    assert store.read_table("clinician_labels")["synthetic"].to_list() == [True] * 14
    assert store.read_table("clinician_validated")["synthetic"].to_list() == [True] * 7
    with pytest.raises(
        ReleaseError,
        match=r"^release mamabench: configuration clinician_validated refused: 3 of 3 "
        "scope tasks were adjudicated from SYNTHETIC annotations .*release_synthetic_labels: true",
    ):
        configurations("mamabench", store, load_settings(cfg))

    allowed = load_settings(_config(tmp_path, "allowed.yaml", min_annotations=1, release_synthetic_labels=True))
    (rel,) = configurations("mamaretrieval", store, allowed)
    assert rel.frame["synthetic"].to_list() == [True] * 4
    assert "at least 1 SYNTHETIC made-up annotator (demo annotations, not clinicians)" in rel.description
    assert "4 of the 4 tasks are SYNTHETIC" in rel.card_section
    assert "at least 1 SYNTHETIC made-up annotator" in rel.card_section
    assert "at least 1 clinician" not in rel.card_section


def test_card_states_the_configured_number_of_annotations(offline):
    store = Store(offline[0] / "data" / "mama.duckdb")
    (rel,) = configurations("mamaretrieval", store, load_settings(_config(offline[0], "one.yaml", min_annotations=1)))
    assert "labelled by at least 1 clinician," in rel.description
    assert "tasks labelled by at least 1 clinician (`clinician.min_annotations`)" in rel.card_section
    with pytest.raises(ReleaseError, match="fewer than clinician.min_annotations = 3; re-materialise"):
        configurations("mamaretrieval", store, load_settings(_config(offline[0], "three.yaml", min_annotations=3)))


def test_synthetic_labels_nobody_validated_are_judged_on_the_card_and_page_too(tmp_path):
    """With clinician.min_annotations above the two made-up annotators per task, no task is validated, but the
    agreement tables still show every label: the release refuses them unless allowed, and then the card, the page
    and the evaluation report's line say SYNTHETIC annotators, never clinicians."""
    from mama_pipeline.clinician._clinician_agreement import METRIC_SCHEMA
    from mama_pipeline.evaluation._clinician_note import clinician_notes

    cfg = tmp_path / "cfg.yaml"
    clinician = {"synthetic_annotators": 2, "relevance_sample_size": 4, "scope_sample_size": 3, "min_annotations": 3}
    cfg.write_text(with_embedded(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "clinician": clinician})))
    assert dg.materialize(fx.ALL, resources=shared_resources(str(cfg))).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    assert (
        store.read_table("clinician_validated").height == 0 and store.read_table("clinician_labels")["synthetic"].all()
    )
    for release in ("mamaretrieval", "mamabench"):
        with pytest.raises(ReleaseError, match=r"labels behind the card's agreement and estimate tables are SYNTHETIC"):
            configurations(release, store, load_settings(cfg))

    allowed = tmp_path / "allowed.yaml"
    allowed.write_text(
        with_embedded(
            yaml.safe_dump(
                {"data_dir": str(tmp_path / "data"), "clinician": {**clinician, "release_synthetic_labels": True}}
            )
        )
    )
    (rel,) = configurations("mamaretrieval", store, load_settings(allowed))
    card = rel.card_section
    assert card.startswith("## Annotator validation (SYNTHETIC annotators, not clinicians)")
    assert "labels behind the agreement tables are SYNTHETIC" in card and "annotator 901" in card
    assert "Agreement between SYNTHETIC annotators (made up, not clinicians) (Krippendorff's alpha)" in card
    assert "between clinicians" not in card and "Clinician validation" not in card
    assert "SYNTHETIC made-up annotator" in rel.description
    page = (tmp_path / "data" / "reports" / "clinician" / "agreement.html").read_text()
    assert "Between SYNTHETIC annotators" in page and "Between clinicians" not in page
    assert "against SYNTHETIC annotators" in page and "vs clinicians" not in page
    assert clinician_notes(store) == []  # nothing validated: no majority to compare the judge with
    majority = pl.DataFrame(  # as a run with a validated majority would store it, the labels still the made-up ones
        [
            ("relevance", "majority", m, 0.5, 4)
            for m in ("lenient_agreement", "strict_agreement", "exact_score_agreement")
        ],
        schema=METRIC_SCHEMA,
        orient="row",
    )
    store.write_table("clinician_agreement", majority)
    (line,) = clinician_notes(store)
    assert line.startswith("Validation against SYNTHETIC annotators: on 4 pairs") and "clinicians' majority" not in line


def test_estimates_built_before_the_ties_were_counted_are_refused_with_the_fix(offline):
    store = Store(offline[0] / "data" / "mama.duckdb")
    with store.connect(write=True) as con:
        con.execute("ALTER TABLE clinician_estimates DROP COLUMN tied")
    with pytest.raises(ReleaseError, match="clinician_estimates has no tied column .* re-materialise it"):
        configurations("mamaretrieval", store, load_settings(offline[0] / "cfg.yaml"))
