"""systems.* configuration: wrong keys and inconsistent entries fail at load time with the key named."""

from __future__ import annotations

import pytest
import yaml

from mama_pipeline.settings import ConfigError, load_settings
from mama_pipeline_tests.support.llm_stages import with_embedded

RETRIEVAL = {
    "retrievers": [
        {"name": "bm25", "kind": "bm25"},
        {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25", "bm25b"]}},
        {"name": "bm25b", "kind": "bm25"},
    ]
}


def load(tmp_path, systems, retrieval=RETRIEVAL):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(with_embedded({"retrieval": retrieval, "systems": systems})))
    return load_settings(path)


def test_valid_systems_load(tmp_path):
    s = load(
        tmp_path,
        {
            "entries": [
                {"name": "a", "base_urls": ["http://x:1/v1"], "model": "m", "concurrency": 64},
                {"name": "b", "mode": "rag", "retriever": "bm25", "k": 3, "baseline": "a"},
            ]
        },
    )
    assert s.systems.names == ["a", "b"] and s.systems.system("a").concurrency == 64
    assert s.systems.system("b").tracks == ["mcq", "short_answer", "rubric"]


@pytest.mark.parametrize(
    "systems,message",
    [
        ({"entries": [{"name": "b", "mode": "rag"}]}, "mode rag needs 'retriever'"),
        ({"entries": [{"name": "b", "mode": "rag", "retriever": "nope"}]}, "retriever 'nope' is not in retrieval"),
        ({"entries": [{"name": "b", "mode": "rag", "retriever": "fused"}]}, "of kind 'rrf'"),
        ({"entries": [{"name": "a"}, {"name": "a"}]}, "repeated: \\['a'\\]"),
        ({"entries": [{"name": "b", "mode": "rag", "retriever": "bm25", "baseline": "zz"}]}, "baseline 'zz'"),
        ({"entries": [{"name": "a", "tracks": ["mcq", "mcq"]}]}, "each track once"),
        ({"entries": [{"name": "a", "temprature": 0}]}, "systems.entries.0.temprature"),
        ({"entries": [{"name": "Bad Name"}]}, "systems.entries.0.name"),
    ],
)
def test_bad_systems_fail_naming_the_problem(tmp_path, systems, message):
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, systems)
