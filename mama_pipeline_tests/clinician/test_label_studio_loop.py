"""The clinician loop against a real Label Studio server: push, annotate as two clinicians, sense, measure.

Also: the labelling view in headless Chromium shows the rubric beside the query
and chunk, and a wrong token or an unreachable server fails with the URL named
and leaves no project behind.
"""

import json
import shutil
import socket
from pathlib import Path

import dagster as dg
import httpx
import polars as pl
import pytest

from mama_pipeline.clinician._label_studio import LabelStudio, LabelStudioError
from mama_pipeline.clinician._labelling_config import relevance_config
from mama_pipeline.clinician._projects import project_title, push_tasks
from mama_pipeline.clinician._synthetic import synthetic_export
from mama_pipeline.clinician._tasks import label_studio_tasks, relevance_tasks
from mama_pipeline.clinician.sensors import clinician_annotations_sensor
from mama_pipeline.resources import SettingsResource, shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.clinician import fixtures as fx
from mama_pipeline_tests.clinician.browser import chromium, open_logged_in, screenshot
from mama_pipeline_tests.clinician.label_studio_server import login
from mama_pipeline_tests.support.llm_stages import with_embedded

pytestmark = pytest.mark.slow
TOKEN_ENV = "MAMA_TEST_LABEL_STUDIO_TOKEN"
SHOT_COPY = Path("/tmp/label_studio_labelling_view.png")
PUSH = [
    "judgments",
    "pooled_pairs",
    "generated_queries",
    "corpus_chunks",
    "mamabench_scope_verdicts",
    "mamabench_adapted",
    "clinician_tasks",
    "clinician_projects",
]


def _config(tmp_path: Path, url: str, prefix: str) -> Path:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            f"clinician: {{label_studio_url: '{url}', token_env: {TOKEN_ENV}, project_prefix: {prefix}, "
            "relevance_sample_size: 4, scope_sample_size: 3, min_annotations: 2}\n"
        )
    )
    return cfg


def _figures(metrics: pl.DataFrame, comparison: str) -> dict:
    return dict(metrics.filter(pl.col("comparison") == comparison).select("metric", "value").iter_rows())


def _sensor(cfg: Path, instance: dg.DagsterInstance, cursor: str | None):
    defs = fx.defs(str(cfg))
    ctx = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        repository_def=defs.get_repository_def(),
        resources={"settings": SettingsResource(config_path=str(cfg))},
    )
    result = clinician_annotations_sensor(load_settings(cfg))(ctx)
    if isinstance(result, dg.SensorResult):  # a change: one run, and the annotations' new data version recorded
        [event] = result.asset_events
        assert event.asset_key == dg.AssetKey("clinician_annotations")
        assert event.tags["dagster/data_version"] == "server:" + ctx.cursor
        [result] = result.run_requests
    return result, ctx


def test_push_annotate_sense_and_measure(tmp_path, label_studio, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, label_studio.token)
    cfg = _config(tmp_path, label_studio.url, "loop")
    resources = shared_resources(str(cfg))
    instance = dg.DagsterInstance.ephemeral()
    pushed = dg.materialize(fx.ALL, selection=PUSH, resources=resources, instance=instance)
    assert pushed.success
    ls = LabelStudio(label_studio.url, label_studio.token)
    projects = {k: ls.project_by_title(project_title("loop", k)) for k in ("relevance", "scope")}
    tasks = {k: ls.tasks(p["id"]) for k, p in projects.items()}
    assert (len(tasks["relevance"]), len(tasks["scope"])) == (4, 3)
    assert {(p["maximum_annotations"], p["overlap_cohort_percentage"]) for p in projects.values()} == {(2, 100)}
    for t in tasks["relevance"]:  # ids, query and chunk only: no judge verdict or score band
        assert set(t["data"]) == {"task_key", "query_id", "chunk_id", "query", "where", "chunk"}

    again = dg.materialize(fx.ALL, selection=["clinician_projects"], resources=resources, instance=instance)
    meta = again.asset_materializations_for_node("clinician_projects")[0].metadata
    assert (meta["relevance/pushed"].value, meta["relevance/already_there"].value) == (0, 4)
    assert [len(ls.tasks(p["id"])) for p in projects.values()] == [4, 3]  # pushing twice: no duplicates
    files = tmp_path / "data" / "clinician" / "label_studio"  # for teams annotating on another server
    elsewhere = ls.create_project("files", "", (files / "scope_config.xml").read_text())
    assert ls.import_tasks(elsewhere["id"], json.loads((files / "scope_tasks.json").read_text())) == 3
    ls.delete_project(elsewhere["id"])

    user_ids = {who: ls.create_user(f"midwife-{who}@example.org", "Midwife", who)["id"] for who in ("one", "two")}
    by_key = {k: {t["data"]["task_key"]: t["id"] for t in ts} for k, ts in tasks.items()}
    for who, uid in user_ids.items():
        for (q, c), label in zip(fx.PAIRS, fx.RELEVANCE_LABELS[who]):
            ls.annotate(by_key["relevance"][f"relevance:{q}:{c}"], fx.relevance_result(label), completed_by=uid)
        for item, category in zip(fx.ITEMS, fx.SCOPE_LABELS[who]):
            ls.annotate(by_key["scope"][f"scope:{item}"], fx.scope_result(category), completed_by=uid)

    request, ctx = _sensor(tmp_path / "cfg.yaml", instance, None)
    assert isinstance(request, dg.RunRequest) and request.run_key == ctx.cursor
    selected = {k.to_user_string() for k in request.asset_selection}
    assert selected == {
        "clinician_labels",
        "clinician_agreement",
        "clinician_confusion",
        "clinician_validated",
        "clinician_estimates",
        "clinician_report",
    }
    page = tmp_path / "data" / "reports" / "clinician" / "agreement.html"
    assert not page.exists()
    run = dg.materialize(fx.ALL, selection=request.asset_selection, resources=resources, instance=instance)
    assert run.success
    assert "4 tasks with at least 2 usable annotations, 2 ties, 0 synthetic" in page.read_text()  # the sensor's run

    store = Store(tmp_path / "data" / "mama.duckdb")
    labels = store.read_table("clinician_labels")
    assert labels.height == 14 and set(labels["annotator_id"]) == {str(u) for u in user_ids.values()}
    assert not labels["synthetic"].any()
    assert labels["updated_at"].is_not_null().all() and (labels["status"] == "labelled").all()
    metrics = store.read_table("clinician_agreement")
    one, two = (_figures(metrics, f"annotator {user_ids[w]}") for w in ("one", "two"))
    assert (one["exact_score_agreement"], one["within_one_point"], one["lenient_agreement"]) == (0.5, 1.0, 0.75)
    assert one["d4_density_agreement"] == pytest.approx(1 / 3) and two["d1_topic_agreement"] == 0.75
    assert (two["exact_score_agreement"], two["strict_agreement"]) == (0.0, 1.0)
    assert _figures(metrics, "majority")["lenient_agreement"] == 0.5
    assert _figures(metrics, "annotators")["krippendorff_alpha_d1_topic"] == pytest.approx(0.0)
    scope = metrics.filter(pl.col("kind") == "scope")
    assert _figures(scope, f"annotator {user_ids['one']}")["cohens_kappa"] == pytest.approx(4 / 7)
    assert _figures(scope, "annotators")["krippendorff_alpha_category"] == pytest.approx(12 / 22)
    exported = json.loads((tmp_path / "data" / "clinician" / "exports" / "relevance_export.json").read_text())
    assert len(exported) == 4 and sum(len(t["annotations"]) for t in exported) == 8  # the server's JSON export
    validated = store.read_table("clinician_validated")
    assert validated.height == 7 and validated["tie"].sum() == 3

    quiet, _ = _sensor(tmp_path / "cfg.yaml", instance, ctx.cursor)
    assert isinstance(quiet, dg.SkipReason) and "no new or changed annotations" in quiet.skip_message
    first = ls.export(projects["scope"]["id"])[0]["annotations"][0]["id"]
    httpx.patch(
        f"{label_studio.url}/api/annotations/{first}/",
        headers={"Authorization": f"Token {label_studio.token}"},
        json={"result": fx.scope_result("NONE")},
    ).raise_for_status()
    changed, _ = _sensor(tmp_path / "cfg.yaml", instance, ctx.cursor)
    assert isinstance(changed, dg.RunRequest) and changed.run_key not in (None, ctx.cursor)


def test_a_synthetic_mark_survives_the_server_and_the_sensor(tmp_path, label_studio, monkeypatch):
    """Made-up annotations imported into Label Studio (marked on the task's meta, which the server keeps) come back
    through the sensor's run as synthetic rows, and the report says so."""
    monkeypatch.setenv(TOKEN_ENV, label_studio.token)
    cfg = _config(tmp_path, label_studio.url, "prov")
    resources, instance = shared_resources(str(cfg)), dg.DagsterInstance.ephemeral()
    ls = LabelStudio(label_studio.url, label_studio.token)
    tasks = relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 4, 1, 3, 5)
    made_up = synthetic_export(tasks, "relevance", 1, 5)
    project = ls.create_project(project_title("prov", "relevance"), "", relevance_config())
    assert ls.import_tasks(project["id"], [{"data": t["data"], "meta": t["meta"]} for t in made_up]) == 4
    me = ls.whoami()["id"]
    for t in ls.tasks(project["id"]):
        ls.annotate(t["id"], fx.relevance_result((True, 2, 2, 2)), completed_by=me)
    assert dg.materialize(fx.ALL, selection=PUSH, resources=resources, instance=instance).success
    request, _ = _sensor(cfg, instance, None)
    assert dg.materialize(fx.ALL, selection=request.asset_selection, resources=resources, instance=instance).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    assert store.read_table("clinician_labels")["synthetic"].to_list() == [True] * 4
    page = (tmp_path / "data" / "reports" / "clinician" / "agreement.html").read_text()
    assert "4 of the 4 labels are SYNTHETIC" in page


def test_labelling_view_shows_rubric_beside_query_and_chunk(tmp_path, label_studio):
    ls = LabelStudio(label_studio.url, label_studio.token)
    tasks = relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 4, 1, 3, 5)
    result = push_tasks(ls, "view", "relevance", label_studio_tasks(tasks, "relevance"))
    task = next(t for t in ls.tasks(result.project_id) if t["data"]["query_id"] == "q_00001")
    session = login(label_studio.url, label_studio.email, label_studio.password)
    needles = [
        fx.QUERY_TEXT,
        fx.CHUNK_TEXT[:50],
        "D1 topic (true or false)",
        "D2 meaningful clinical content",
        "D3 actionable guidance",
        "D4 density for THIS question",
    ]
    with chromium(tmp_path / "profile") as dt:
        boxes = open_logged_in(
            dt,
            label_studio.url,
            dict(session.cookies.items()),
            f"{label_studio.url}/projects/{result.project_id}/data?task={task['id']}",
            needles,
        )
        shot = screenshot(dt, tmp_path / "labelling_view.png")
    shutil.copy(tmp_path / "labelling_view.png", SHOT_COPY)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 30_000
    query, chunk, d1 = boxes[0], boxes[1], boxes[2]
    assert all(boxes), boxes
    assert d1["left"] >= max(query["right"], chunk["right"]) - 1, boxes  # rubric to the right of query and chunk
    assert d1["top"] < chunk["bottom"] and d1["bottom"] > query["top"], boxes  # side by side, not below


def test_wrong_token_or_unreachable_server_names_the_url_and_leaves_no_project(tmp_path, label_studio, monkeypatch):
    admin = LabelStudio(label_studio.url, label_studio.token)
    before = {p["id"] for p in admin.projects()}
    tasks = [
        {
            "data": {
                "task_key": "relevance:q:c",
                "query_id": "q",
                "chunk_id": "c",
                "query": "?",
                "where": "w",
                "chunk": "text",
            }
        }
    ]
    with pytest.raises(LabelStudioError, match=rf"^Label Studio at {label_studio.url} rejected the API token"):
        push_tasks(LabelStudio(label_studio.url, "not-the-token"), "bad", "relevance", tasks)
    dead = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(LabelStudioError, match=rf"^Label Studio at {dead} is unreachable"):
        push_tasks(LabelStudio(dead, label_studio.token), "bad", "relevance", tasks)
    with pytest.raises(
        LabelStudioError, match=rf"^Label Studio at {label_studio.url}: POST .*import failed with HTTP 400"
    ):
        push_tasks(admin, "half", "relevance", [{"data": {"task_key": "relevance:q:c"}}])  # no query, chunk: refused
    assert {p["id"] for p in admin.projects()} == before  # the project created for the failed push is gone

    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    cfg = _config(tmp_path, label_studio.url, "asset")
    result = dg.materialize(fx.ALL, selection=PUSH, resources=shared_resources(str(cfg)), raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert f"Label Studio at {label_studio.url} rejected the API token" in str(failure.event_specific_data.error)
    assert "not-the-token" not in json.dumps([str(e) for e in result.all_events])
    assert {p["id"] for p in admin.projects()} == before
    skipped, ctx = _sensor(cfg, dg.DagsterInstance.ephemeral(), None)  # the sensor says why, and requests nothing
    assert isinstance(skipped, dg.SkipReason) and f"Label Studio at {label_studio.url} rejected" in skipped.skip_message
    assert ctx.cursor is None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
