"""The mamabench group materialised end to end on the fixtures, with the fake LLM server as classifier."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.mamabench import _scope_prompt as scope_prompt
from mama_pipeline.mamabench.definitions import build_defs as build_mamabench_defs
from mama_pipeline.release.assets import mamabench_release
from mama_pipeline.resources import LLMResource, SettingsResource, shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.mamabench.helpers import PACKAGE
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_mamabench_defs(load_settings())

CALIBRATION = pl.DataFrame(
    {
        "upstream_line": [1],
        "prompt": [[{"role": "user", "content": "Is spotting normal at 8 weeks?"}]],
        "completion": ["It can be."],
        "rubric": ["Mentions when to seek care."],
        "category": ["cluster:x"],
        "binary_labels": [[True, False]],
        "anonymized_physician_ids": [["d1", "d2"]],
        "prompt_id": ["p1"],
        "completion_id": ["c1"],
        "canary": [None],
        "scope_category": ["MATERNAL"],
    },
    schema_overrides={"canary": pl.String},
)


@dg.asset(key="calibration_side_file")
def stub_side_file() -> pl.DataFrame:
    """Stands in for the calibration area's side-file."""
    return CALIBRATION


def write_config(tmp_path: Path, url: str, reference: dict) -> Path:
    (tmp_path / "sample_data").symlink_to(PACKAGE / "sample_data")  # the defaults resolve against the config folder
    path = tmp_path / "config.yaml"
    fast = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "concurrency": 32}
    path.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "llm": {
                        "classifier": {"base_urls": [url], "model": "fake-classifier", **fast},
                        "classifier_reference": {"base_urls": [url], **fast, **reference},
                    },
                    "mamabench": {"agreement_sample_size": 10},
                }
            )
        )
    )
    return path


@pytest.fixture
def config(tmp_path: Path, fake_llm) -> Path:
    return write_config(tmp_path, fake_llm.url, {"model": "fake-reference"})


def materialise(
    config: Path, selection: dg.AssetSelection = dg.AssetSelection.all(), raise_on_error: bool = True
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [stub_side_file, *defs.assets, mamabench_release, *defs.asset_checks],
        resources=shared_resources(str(config)),
        selection=selection,
        raise_on_error=raise_on_error,
    )


def test_group_materialises_reuses_answers_and_reclassifies_after_a_prompt_edit(
    config, tmp_path, fake_llm, monkeypatch
):
    fake_llm.reset()
    result = materialise(config)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.check_name: c.passed for c in checks} == {
        "mamabench_accounting_invariant": True,
        "mamabench_items_valid": True,
        "classifier_failure_rate_under_bound": True,
        "reference_is_another_classifier": True,
    }
    first_calls = fake_llm.stats()["chat_calls"]
    # 150 MedQA + 60 Kenya + 40 oss_eval + 6 hard (same conversations as oss_eval: cached) + 10 reference
    assert first_calls == 150 + 60 + 40 + 10

    store = Store(tmp_path / "data" / "mama.duckdb")
    y = {r["pool"]: r for r in store.read_table("mamabench_yield").iter_rows(named=True)}
    assert (y["medmcqa"]["upstream_rows"], y["medmcqa"]["kept"], y["medmcqa"]["out_of_scope"]) == (120, 60, 60)
    assert (y["afrimedqa_mcq"]["kept"], y["afrimedqa_mcq"]["refused"], y["afrimedqa_mcq"]["out_of_scope"]) == (4, 0, 6)
    assert (y["afrimedqa_saq"]["kept"], y["afrimedqa_saq"]["refused"]) == (3, 1)
    assert y["whb"]["kept"] == 20 and y["healthbench_hard"]["refused"] == 1
    assert y["healthbench_consensus"]["unclassified"] >= 1  # the row without an oss_eval twin
    for r in y.values():
        assert r["upstream_rows"] == r["kept"] + r["refused"] + r["out_of_scope"] + r["unclassified"]
    acc = store.read_table("mamabench_accounting")
    multi = acc.filter(pl.col("upstream_id").str.starts_with("1f2756560b3598b5"))
    assert multi.select("status", "reason").rows() == [("out_of_scope", None)]  # outside obstetrics: not a refusal

    hb = store.read_table("healthbench_scope_verdicts")
    assert hb.height == 40 and hb["prompt_id"].is_unique().all()
    assert store.read_table("mamabench_agreement").height == 10
    assert store.read_table("mamabench_kenya_parity").height == 60

    release = tmp_path / "data" / "releases" / "mamabench" / "0.0.0-sample"
    manifest = json.loads((release / "manifests" / "manifest.json").read_text())
    assert manifest["items"]["total"] == store.read_table("mamabench_items").height
    assert manifest["classifier"]["prompt_hash"] == scope_prompt.SCOPE_TEMPLATE.hash
    assert manifest["calibration_rows"] == 1
    assert manifest["agreement"]["audit"] == "cross_model"  # fake-reference is another model
    assert set(store.read_table("mamabench_agreement")["audit"]) == {"cross_model"}
    card = (release / "README.md").read_text()
    assert "Cross-model agreement with another classifier model, `fake-reference`," in card
    readme = (release / "README.md").read_bytes()

    fake_llm.reset()
    assert materialise(config).success
    assert fake_llm.stats()["chat_calls"] == 0  # nothing changed: every answer from the cache
    assert (release / "README.md").read_bytes() == readme  # and the same bytes

    edited = PromptTemplate("scope_classifier", scope_prompt.SYSTEM + "\nKeep the rationale short.", scope_prompt.USER)
    monkeypatch.setattr(scope_prompt, "SCOPE_TEMPLATE", edited)
    fake_llm.reset()
    assert materialise(config, dg.AssetSelection.assets("mamabench_scope_verdicts")).success
    assert fake_llm.stats()["chat_calls"] == first_calls - 10  # every classifier request asked again
    verdicts = store.read_table("mamabench_scope_verdicts").filter(pl.col("via") == "classifier")
    assert set(verdicts["prompt_hash"]) == {edited.hash}


CLASSIFIER_CALLS = 150 + 60 + 40  # MedQA + Kenya + oss_eval (the hard pool's conversations are oss_eval's: cached)


@pytest.mark.parametrize("difference", [{"seed": 1}, {"temperature": 0.7}, {"cache_namespace": "another-server"}])
def test_reference_with_the_classifiers_model_name_but_another_endpoint_or_decoding_asks_its_own_questions(
    tmp_path, fake_llm, difference
):
    config = write_config(tmp_path, fake_llm.url, {"model": "fake-classifier", **difference})
    fake_llm.reset()
    result = materialise(config)
    assert fake_llm.stats()["chat_calls"] == CLASSIFIER_CALLS + 10  # the reference asked its 10 sampled items again
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert checks["reference_is_another_classifier"].passed
    pairs = Store(tmp_path / "data" / "mama.duckdb").read_table("mamabench_agreement")
    assert set(pairs["model_a"]) == set(pairs["model_b"]) == {"fake-classifier"}
    assert pairs["identity_a"].n_unique() == pairs["identity_b"].n_unique() == 1
    assert pairs["identity_a"][0] != pairs["identity_b"][0] and pairs["note"].is_null().all()
    manifest = json.loads((tmp_path / "data/releases/mamabench/0.0.0-sample/manifests/manifest.json").read_text())
    assert manifest["agreement"]["note"] is None and manifest["agreement"]["agreement_pct"] is not None
    # the classifier's own model asked again is a test-retest, named so in the data, the metadata and the card
    assert manifest["agreement"]["audit"] == "self_consistency" and set(pairs["audit"]) == {"self_consistency"}
    meta = result.asset_materializations_for_node("mamabench_agreement")[0].metadata
    assert meta["agreement/audit"].value == "self-consistency (test-retest)"
    card = (tmp_path / "data/releases/mamabench/0.0.0-sample/README.md").read_text()
    assert "Self-consistency (test-retest) of the classifier: its own model `fake-classifier`" in card
    assert "Cross-model" not in card and "Cross-classifier" not in card


def test_identical_reference_classifier_is_refused_by_a_blocking_check_and_the_card_says_why(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm.url, {"model": "fake-classifier"})
    fake_llm.reset()
    result = materialise(config, raise_on_error=False)
    assert fake_llm.stats()["chat_calls"] == CLASSIFIER_CALLS  # the reference got the classifier's cached answers
    check = {c.check_name: c for c in result.get_asset_check_evaluations()}["reference_is_another_classifier"]
    assert not check.passed and check.blocking
    assert "the reference classifier is the classifier itself" in check.metadata["reason"].value
    assert not result.asset_materializations_for_node("mamabench_release")  # blocked
    meta = result.asset_materializations_for_node("mamabench_agreement")[0].metadata
    assert meta["reference_is_the_classifier"].value is True and meta["agreement/agreement_pct"].value is None
    assert "confusion" not in meta and "classifier itself" in meta["agreement/refused"].value
    pairs = Store(tmp_path / "data" / "mama.duckdb").read_table("mamabench_agreement")
    assert pairs.height == 10 and (pairs["identity_a"] == pairs["identity_b"]).all()
    assert pairs["note"].str.contains("fake-classifier").all()

    assert materialise(config, dg.AssetSelection.assets("mamabench_release")).success  # asked for on its own
    release = tmp_path / "data" / "releases" / "mamabench" / "0.0.0-sample"
    agreement = json.loads((release / "manifests" / "manifest.json").read_text())["agreement"]
    assert agreement["agreement_pct"] is None and agreement["cohens_kappa"] is None and agreement["items"] == 10
    assert "the reference classifier is the classifier itself" in agreement["note"]
    card = (release / "README.md").read_text()
    assert "No classifier agreement figure." in card and "agreement with" not in card
    audit = json.loads((release / "audit" / "agreement.json").read_text())
    assert audit["agreement_pct"] is None and audit["confusion"] == [] and audit["note"] == agreement["note"]


RUN_CONFIGS = {"materialize-run-config.yaml", "multiprocess-run-config.yaml"}  # Dagster run configs, no settings
BUNDLED = [
    PACKAGE / "sample_config.yaml",
    PACKAGE / "demo_config.yaml",
    *(p for p in sorted((PACKAGE.parent / "config").glob("*.yaml")) if p.name not in RUN_CONFIGS),
]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_bundled_configurations_give_the_reference_stages_another_identity(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path))  # the clients open the store; nothing is started or asked
    llm = LLMResource(settings=SettingsResource(config_path=str(path)))
    identity = {}
    for stage in ("classifier", "classifier_reference", "judge", "reference_judge"):
        with llm.client(stage) as client:
            identity[stage] = client.identity
    assert identity["classifier"] != identity["classifier_reference"]
    assert identity["judge"] != identity["reference_judge"]
