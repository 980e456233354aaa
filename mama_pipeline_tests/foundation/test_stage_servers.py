"""Every LLM stage names its server: endpoints, or ``embedded: true`` for the smoke-test model; nothing else loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mama_pipeline.llm.settings import LLM_STAGES, StageSettings
from mama_pipeline.resources import LLMResource, SettingsResource
from mama_pipeline.settings import SAMPLE_CONFIG, ConfigError, load_settings

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = [REPO / "config" / "mamaretrieval-v0.2.yaml", REPO / "config" / "multiserver-example.yaml"]
STAGES = [
    "classifier",
    "classifier_reference",
    "query_writer",
    "judge",
    "reference_judge",
    "rubric_judge",
    "query_rewriter",
    "rewrite_gate",
    "answer_grader",
]


def test_the_stage_list_is_every_stage_of_the_llm_section_the_optional_one_included():
    """``LLM_STAGES`` is derived from ``LLMSettings`` (``embedded_server`` is a server, not a stage)."""
    assert LLM_STAGES == (
        "classifier",
        "classifier_reference",
        "query_writer",
        "judge",
        "reference_judge",
        "cross_model_judge",
        "rubric_judge",
        "query_rewriter",
        "rewrite_gate",
        "answer_grader",
    )


@pytest.mark.parametrize("path", PRODUCTION, ids=lambda p: p.name)
def test_the_shipped_production_configurations_put_no_stage_on_the_embedded_model(path):
    s = load_settings(path)
    assert s.embedded_stages() == []
    for stage in STAGES:
        cfg = getattr(s.llm, stage)
        assert cfg.base_urls and cfg.model and not cfg.embedded, stage


@pytest.mark.parametrize("stage", ["rewrite_gate", "judge"])
def test_a_stage_missing_its_endpoint_is_refused_in_one_line_naming_it(tmp_path, stage):
    raw = yaml.safe_load(PRODUCTION[0].read_text())
    del raw["llm"][stage]["base_urls"]
    path = tmp_path / "v0.2-edited.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:")
    assert f"key 'llm.{stage}' (line " in message and f"no endpoint for LLM stage(s) llm.{stage}:" in message
    assert all(f"llm.{other}" not in message for other in STAGES if other != stage)


def test_an_answering_system_without_an_endpoint_is_refused_too(tmp_path):
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    del raw["systems"]["entries"][1]["embedded"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"no endpoint for LLM stage\(s\) systems\.entries\.1:"):
        load_settings(path)


def test_embedded_and_base_urls_together_are_refused():
    with pytest.raises(ValueError, match="embedded: true and base_urls both set"):
        StageSettings(embedded=True, base_urls=["http://judge:8000/v1"], model="m")


def test_the_demo_and_sample_configurations_mark_every_stage_embedded():
    for path in (SAMPLE_CONFIG, SAMPLE_CONFIG.with_name("demo_config.yaml")):
        s = load_settings(path)
        assert s.embedded_stages() == [f"llm.{k}" for k in STAGES] + ["systems.entries.0", "systems.entries.1"]


def test_the_llm_resource_starts_no_embedded_server_for_a_stage_that_does_not_ask_for_it():
    resource = LLMResource(settings=SettingsResource(config_path=str(SAMPLE_CONFIG)))
    with pytest.raises(ValueError, match="stage 'a-system' has no endpoint"):
        with resource.client_for("a-system", StageSettings()):
            pass
