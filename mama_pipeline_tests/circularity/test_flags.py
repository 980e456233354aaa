"""Circularity flags: model families, per-part overrides, and which judge / judged pairs are flagged."""

import re

import pytest
from pydantic import ValidationError

from mama_pipeline.circularity._flags import (
    circularity_flags,
    circularity_notes,
    flag_record,
    flag_table,
    model_family,
    retrieval_flags,
    retriever_notes,
)
from mama_pipeline.settings import ConfigError, PipelineSettings, load_settings
from mama_pipeline_tests.support.llm_stages import with_embedded

REMOTE = {"base_urls": ["http://llm:8000/v1"]}
REV = "a" * 40


def _settings(**over) -> PipelineSettings:
    raw = {
        "llm": {
            "judge": {**REMOTE, "model": "Qwen/Qwen3.5-397B-A17B-FP8"},
            "query_writer": {**REMOTE, "model": "meta-llama/Llama-3.3-70B-Instruct"},
            "answer_grader": {**REMOTE, "model": "openai/gpt-oss-120b"},
            "rubric_judge": {**REMOTE, "model": "openai/gpt-oss-120b"},
        },
        "retrieval": {
            "retrievers": [
                {"name": "bm25", "kind": "bm25"},
                {"name": "qemb", "kind": "dense", "params": {"model_id": "Qwen/Qwen3.5-Embedding-8B", "revision": REV}},
                {"name": "e5", "kind": "dense", "params": {"model_id": "intfloat/e5-large-v2", "revision": REV}},
                {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25", "qemb"]}},
                {
                    "name": "rr",
                    "kind": "rerank",
                    "params": {
                        "run": "bm25",
                        "backend": {
                            "type": "endpoint",
                            "base_url": "http://rr:8000/v1",
                            "model": "qwen/qwen3.5-397b-a17b-fp8",
                        },
                    },
                },
            ]
        },
        "systems": {
            "entries": [
                {"name": "gpt", **REMOTE, "model": "openai/gpt-oss-20b"},
                {"name": "llama", **REMOTE, "model": "meta-llama/Llama-3.1-8B-Instruct"},
            ]
        },
    }
    for key, value in over.items():
        raw[key] = value
    return PipelineSettings.model_validate(with_embedded(raw))


def test_model_family_is_organisation_and_base_name():
    assert model_family("Qwen/Qwen3.5-397B-A17B-FP8") == "qwen/qwen3.5"
    assert model_family("Qwen/Qwen3-8B") == "qwen/qwen3"
    assert model_family("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama/llama"
    assert model_family("smollm2-135m-instruct") == "smollm2"
    assert model_family("/models/Qwen3.5-9B") == "qwen3.5"


def test_judge_shares_family_or_model_with_retrievers_and_grader_with_systems():
    flags = {(f.judge, f.part): f for f in circularity_flags(_settings())}
    assert set(flags) == {
        ("llm.judge", "retrieval.qemb"),
        ("llm.judge", "retrieval.rr"),
        ("llm.judge", "retrieval.fused"),
        ("llm.answer_grader", "systems.gpt"),
        ("llm.rubric_judge", "systems.gpt"),
    }
    assert flags[("llm.judge", "retrieval.qemb")].shared == "family"
    assert flags[("llm.judge", "retrieval.rr")].shared == "model"  # the same id, case aside
    assert flags[("llm.judge", "retrieval.fused")].model == "fuses retriever qemb"
    assert flags[("llm.answer_grader", "systems.gpt")].family == "openai/gpt"
    notes = retriever_notes(list(flags.values()), ["bm25", "qemb", "e5"])
    assert set(notes) == {"qemb"} and "share the model family qwen/qwen3.5" in notes["qemb"]
    assert flag_table(list(flags.values())).height == 5


def test_configured_families_and_the_query_writer_flag_every_retriever():
    s = _settings(circularity={"families": {"llm.query_writer": "qwen/qwen3.5", "retrieval.qemb": "other/x"}})
    flags = circularity_flags(s)
    parts = {f.part for f in flags if f.judge == "llm.judge"}
    assert parts == {"llm.query_writer", "retrieval.rr"}  # qemb's family is configured away; fused follows it
    notes = retriever_notes(flags, ["bm25", "e5"])
    assert set(notes) == {"bm25", "e5"} and "the query writer (meta-llama/Llama-3.3-70B-Instruct)" in notes["bm25"]
    lines = circularity_notes([f for f in flags if f.judge == "llm.judge"])
    assert lines[0] == (
        "Circular: the relevance judge (Qwen/Qwen3.5-397B-A17B-FP8) and the query writer "
        "(meta-llama/Llama-3.3-70B-Instruct) share the model family qwen/qwen3.5: every retriever's "
        "figures (the judge labels pairs for queries its own model family wrote)."
    )
    assert lines[1].endswith("share the model: the figures of retriever rr (a judge may favour its own model family).")
    every = circularity_flags(_settings())
    for line in circularity_notes(every) + list(retriever_notes(every, ["bm25", "qemb", "rr", "fused"]).values()):
        assert not re.search(r"\b(llm|retrieval|systems)\.\w", line), line  # the reader's words, not config keys
    assert {flag_record(f)["part"] for f in every} >= {"retrieval.qemb", "systems.gpt"}  # keys kept in the record
    # a retrieval page shows the relevance judge's flags only; the graders' stand on the systems page
    assert {f.judge for f in retrieval_flags(_settings())} == {"llm.judge"}
    assert {f.judge for f in every} > {"llm.judge"}


def test_embedded_stages_share_the_smoke_test_model_and_unknown_keys_fail(tmp_path):
    s = PipelineSettings.model_validate(with_embedded({"systems": {"entries": [{"name": "x"}]}}))
    got = {(f.judge, f.part, f.shared) for f in circularity_flags(s)}
    assert got == {
        ("llm.judge", "llm.query_writer", "model"),
        ("llm.answer_grader", "systems.x", "model"),
        ("llm.rubric_judge", "systems.x", "model"),
    }
    with pytest.raises(ValidationError, match=r"circularity.families names unknown parts \['retrieval.nope'\]"):
        _settings(circularity={"families": {"retrieval.nope": "a/b"}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("circularity:\n  families: {systems.nope: a/b}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(bad)
    assert str(err.value).startswith(f"{bad}: configuration file") and "['systems.nope']" in str(err.value)
    assert "\n" not in str(err.value)
