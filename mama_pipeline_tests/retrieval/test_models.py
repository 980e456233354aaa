"""Dense (all-MiniLM-L6-v2) and sparse (splade-tiny) retrievers with the real models from their wheels."""

import numpy as np
import polars as pl
import pytest

from mama_pipeline.retrieval._encoders import ModelLoadError
from mama_pipeline.retrieval._kinds.dense_kind import DenseParams, default_dense_folder, load_dense
from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval._retriever_rankings import ranking_violations
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunk_id, chunks_frame, queries_frame

pytestmark = pytest.mark.slow


def spec(kind, **params):
    return RetrievalSettings.model_validate({"retrievers": [{"name": "m", "kind": kind, "params": params}]}).retriever(
        "m"
    )


def env(store, tmp_path):
    return RetrievalEnv(store, tmp_path / "work", lambda p: tmp_path / p, lambda names, ids: None, log=lambda m: None)


@pytest.fixture
def encoded_texts(monkeypatch):
    """Every text that reaches SentenceTransformer.encode / SparseEncoder.encode."""
    from sentence_transformers import SentenceTransformer, SparseEncoder

    seen: list[str] = []
    for cls in (SentenceTransformer, SparseEncoder):
        original = cls.encode

        def spy(self, inputs, *args, _original=original, **kwargs):
            seen.extend([inputs] if isinstance(inputs, str) else inputs)
            return _original(self, inputs, *args, **kwargs)

        monkeypatch.setattr(cls, "encode", spy)
    return seen


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_real_model_retrieves_and_reembeds_only_changed_chunks(store, tmp_path, encoded_texts, kind):
    e = env(store, tmp_path)
    out = run_retriever(spec(kind), chunks_frame(), queries_frame(), 3, e)
    top = dict(out.rankings.filter(pl.col("rank") == 1).select("query_id", "chunk_id").iter_rows())
    assert top["q_00002"] == chunk_id(TEXTS[1]) and top["q_00003"] == chunk_id(TEXTS[3])
    assert ranking_violations(out.rankings).is_empty()
    assert out.metadata["chunk_texts_embedded_now"] == len(TEXTS)

    v2 = TEXTS[:-1] + ["Postpartum haemorrhage is blood loss of 500 ml or more after birth."]
    encoded_texts.clear()
    again = run_retriever(spec(kind), chunks_frame(v2, version="v2"), queries_frame(), 3, e)
    assert [t for t in encoded_texts if t] == [v2[-1]]  # queries and 7 chunks come from the cache
    assert again.metadata["chunk_texts_from_cache"] == len(TEXTS) - 1


def test_truncation_is_counted(store, tmp_path):
    long_text = " ".join(["haemorrhage"] * 300)
    chunks = chunks_frame(TEXTS + [long_text])
    out = run_retriever(spec("dense", max_seq_length=32), chunks, queries_frame(), 3, env(store, tmp_path))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(default_dense_folder()))
    expected = sum(len(tokenizer(t)["input_ids"]) > 32 for t in chunks["text"])
    assert out.metadata["max_seq_length"] == 32
    assert 1 <= expected < chunks.height and out.metadata["chunks_truncated"] == expected


def test_query_prompt_changes_the_query_vectors(store, tmp_path):
    plain = load_dense(DenseParams(), lambda p: tmp_path / p)
    prompted = load_dense(DenseParams(query_prompt="query: "), lambda p: tmp_path / p)
    a = plain.encode(["eclampsia"], "query").vectors
    b = prompted.encode(["eclampsia"], "query").vectors
    assert not np.allclose(a, b) and plain.model_key("query") != prompted.model_key("query")
    assert plain.model_key("document") == prompted.model_key("document")


def test_a_folder_that_does_not_load_names_the_model(tmp_path):
    broken = tmp_path / "my-broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="my-broken-model") as err:
        load_dense(DenseParams(model_path="my-broken-model"), lambda p: tmp_path / p)
    assert "\n" not in str(err.value)
    with pytest.raises(ModelLoadError, match="does not exist") as err:
        load_dense(DenseParams(model_path="absent"), lambda p: tmp_path / p)
    assert "\n" not in str(err.value)
