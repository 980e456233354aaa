"""Retriever configuration: typed params per kind, errors naming the key, derived depths."""

import pytest
import yaml

from mama_pipeline.settings import ConfigError, load_settings
from mama_pipeline_tests.support.llm_stages import with_embedded


def load(tmp_path, retrieval):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(with_embedded({"retrieval": retrieval})))
    return load_settings(path).retrieval


def test_sample_config_pools_bm25_minilm_and_splade():
    r = load_settings().retrieval
    assert [(x.name, x.kind) for x in r.retrievers] == [
        ("bm25", "bm25"),
        ("minilm", "dense"),
        ("splade-tiny", "sparse"),
    ]
    assert r.pooled == ["bm25", "minilm", "splade-tiny"] and r.pool_depth == 5
    assert r.depth_of("bm25") == max(r.pool_depth, r.audit.depth)


@pytest.mark.parametrize(
    "retrieval, key",
    [
        (
            {"retrievers": [{"name": "b", "kind": "bm25", "params": {"stemmer": "snowball"}}]},
            "retrieval.retrievers.0.params.stemmer",
        ),
        ({"retrievers": [{"name": "b", "kind": "bm25", "params": {"k3": 1}}]}, "retrieval.retrievers.0.params.k3"),
        (
            {"retrievers": [{"name": "d", "kind": "dense", "params": {"model_id": "org/m"}}]},
            "retrieval.retrievers.0.params",
        ),
        ({"retrievers": [{"name": "x", "kind": "colbert"}]}, "retrieval.retrievers.0"),
        ({"retrievers": [{"name": "Bad Name", "kind": "bm25"}]}, "retrieval.retrievers.0.name"),
        (
            {
                "retrievers": [
                    {"name": "o", "kind": "openai_embeddings", "params": {"base_url": "host:8000", "model": "m"}}
                ]
            },
            "retrieval.retrievers.0.params.base_url",
        ),
        ({"retrievers": [{"name": "i", "kind": "imported"}]}, "retrieval.retrievers.0.params"),
    ],
)
def test_bad_params_fail_at_load_naming_the_key(tmp_path, retrieval, key):
    with pytest.raises(ConfigError) as err:
        load(tmp_path, retrieval)
    assert f"key '{key}" in str(err.value)


@pytest.mark.parametrize(
    "retrieval, message",
    [
        ({"retrievers": [{"name": "b", "kind": "bm25"}, {"name": "b", "kind": "dense"}]}, "repeated: ['b']"),
        (
            {"retrievers": [{"name": "b", "kind": "bm25"}], "pool_retrievers": ["dense"]},
            "pool_retrievers names unknown",
        ),
        (
            {
                "retrievers": [
                    {"name": "b", "kind": "bm25"},
                    {"name": "f", "kind": "rrf", "params": {"runs": ["b", "f"]}},
                ]
            },
            "must name another, non-rrf retriever",
        ),
        ({"retrievers": [{"name": "b", "kind": "bm25", "top_k": 10}], "pool_depth": 20}, "top_k 10 is shallower"),
    ],
)
def test_inconsistent_registry_fails(tmp_path, retrieval, message):
    with pytest.raises(ConfigError, match="retrieval") as err:
        load(tmp_path, retrieval)
    assert message in str(err.value)


def test_depth_is_the_deepest_pool_asking(tmp_path):
    r = load(
        tmp_path,
        {
            "retrievers": [
                {"name": "a", "kind": "bm25"},
                {"name": "b", "kind": "bm25"},
                {"name": "c", "kind": "bm25", "top_k": 100},
                {"name": "f", "kind": "rrf", "params": {"runs": ["a", "b"], "depth": 60}},
            ],
            "pool_retrievers": ["a"],
            "pool_depth": 20,
            "audit": {"retrievers": ["a", "b"], "depth": 40},
        },
    )
    assert [r.depth_of(n) for n in "abcf"] == [60, 60, 100, 20]


def test_hub_model_needs_a_commit(tmp_path):
    ok = load(
        tmp_path,
        {"retrievers": [{"name": "d", "kind": "dense", "params": {"model_id": "org/m", "revision": "a" * 40}}]},
    )
    assert ok.retriever("d").params.revision == "a" * 40
