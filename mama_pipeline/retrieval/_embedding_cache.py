"""Embeddings cached in DuckDB per (encoder setup, sha256 of the text).

A new corpus version shares most chunk texts with the last one, so only texts
never embedded under the same encoder setup reach the encoder. New vectors are
written every ``flush_every`` texts, so an interrupted run keeps its progress;
encoding reports its progress (:mod:`mama_pipeline.common.progress`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import polars as pl

from mama_pipeline.common.progress import track
from mama_pipeline.store import Store

TABLE = "embedding_cache"
PROGRESS_EVERY_TEXTS = 512  # texts per encode call: a multiple of the usual batch sizes, so batches are unchanged
Role = Literal["query", "document"]


@dataclass
class Encoded:
    """Vectors for texts in order: a dense float32 array, or a scipy CSR matrix for sparse encoders."""

    vectors: object
    n_tokens: np.ndarray  # tokens of prompt + text before truncation; -1 when unknown


class Encoder(Protocol):
    sparse: bool
    dimension: int  # vector length (sparse: vocabulary size)
    max_seq_length: int | None

    def model_key(self, role: Role) -> str:
        """Everything that changes a vector: model identity, role, prompt, length limit, normalisation."""

    def encode(self, texts: list[str], role: Role) -> Encoded: ...

    def client_figures(self) -> dict[str, float | int]:
        """A served encoder's HTTP figures so far (``embeddings/http_calls``, ``embeddings/wall_s``: the time spent
        waiting on the endpoint); empty for a local model."""


@dataclass
class EmbedStats:
    texts: int = 0
    unique_texts: int = 0
    cached: int = 0
    encoded: int = 0
    encoder_calls: int = 0
    truncated: int = 0  # texts longer than the encoder's max_seq_length (their tail was not embedded)
    token_counts_unknown: int = 0
    model_keys: list[str] = field(default_factory=list)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_with_cache(
    store: Store, encoder: Encoder, texts: list[str], role: Role, flush_every: int = 4096
) -> tuple[Encoded, EmbedStats]:
    """Vectors for ``texts`` (in order), encoding only texts missing from the cache."""
    store.ensure_tables(TABLE)
    key = encoder.model_key(role)
    hashes = [text_sha256(t) for t in texts]
    unique = dict(zip(hashes, texts))
    stats = EmbedStats(texts=len(texts), unique_texts=len(unique), model_keys=[key])
    missing = sorted(set(unique) - _cached_hashes(store, key, list(unique)))
    stats.cached = len(unique) - len(missing)
    missing.sort(key=lambda h: -len(unique[h]))  # similar lengths batch together, as encode() itself does
    with track(f"encoding {role} texts", total=len(missing), unit="texts", alike=True) as bar:
        for start in range(0, len(missing), flush_every):
            group = missing[start : start + flush_every]
            parts = []
            for sub in range(0, len(group), PROGRESS_EVERY_TEXTS):
                part = group[sub : sub + PROGRESS_EVERY_TEXTS]
                parts.append(encoder.encode([unique[h] for h in part], role))
                stats.encoder_calls += 1
                bar.update(len(part))
            stats.encoded += len(group)
            _insert(store, key, group, _concat(parts, encoder.sparse), encoder.sparse)
    rows = _load(store, key, hashes)
    tokens = rows["n_tokens"].fill_null(-1).to_numpy()
    stats.token_counts_unknown = int((tokens < 0).sum())
    if encoder.max_seq_length is not None:
        stats.truncated = int((tokens > encoder.max_seq_length).sum())
    return Encoded(_vectors(rows, encoder), tokens), stats


def _concat(parts: list[Encoded], sparse: bool) -> Encoded:
    if len(parts) == 1:
        return parts[0]
    if sparse:
        import scipy.sparse as sp

        vectors = sp.vstack([p.vectors for p in parts], format="csr")
    else:
        vectors = np.concatenate([np.asarray(p.vectors) for p in parts])
    return Encoded(vectors, np.concatenate([p.n_tokens for p in parts]))


def _cached_hashes(store: Store, key: str, hashes: list[str]) -> set[str]:
    wanted = pl.DataFrame({"text_sha256": hashes}, schema={"text_sha256": pl.String}).to_arrow()
    with store.connect() as con:
        con.register("_wanted", wanted)
        found = con.execute(
            f"SELECT text_sha256 FROM {TABLE} JOIN _wanted USING (text_sha256) WHERE model_key = ?", [key]
        ).fetchall()
    return {h for (h,) in found}


def _insert(store: Store, key: str, hashes: list[str], encoded: Encoded, sparse: bool) -> None:
    frame = pl.DataFrame(
        {"model_key": [key] * len(hashes), "text_sha256": hashes, "n_tokens": encoded.n_tokens},
        schema={"model_key": pl.String, "text_sha256": pl.String, "n_tokens": pl.Int32},
    ).with_columns(n_tokens=pl.when(pl.col("n_tokens") >= 0).then("n_tokens"))  # -1 (unknown) is stored as NULL
    if sparse:
        m = encoded.vectors.tocsr()
        m.sort_indices()
        splits = m.indptr[1:-1]
        frame = frame.with_columns(
            indices=pl.Series(np.split(m.indices.astype(np.int32), splits), dtype=pl.List(pl.Int32)),
            vector=pl.Series(np.split(m.data.astype(np.float32), splits), dtype=pl.List(pl.Float32)),
        )
    else:
        frame = frame.with_columns(vector=pl.Series(np.asarray(encoded.vectors, dtype=np.float32)))
    with store.connect(write=True) as con:
        con.register("_incoming", frame.to_arrow())
        con.execute(f"INSERT OR IGNORE INTO {TABLE} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")


def _load(store: Store, key: str, hashes: list[str]) -> pl.DataFrame:
    wanted = pl.DataFrame(
        {"pos": np.arange(len(hashes), dtype=np.int64), "text_sha256": hashes},
        schema={"pos": pl.Int64, "text_sha256": pl.String},
    ).to_arrow()
    with store.connect() as con:
        con.register("_wanted", wanted)
        rows = con.execute(
            f"""SELECT w.pos, c.n_tokens, c.indices, c.vector
                FROM _wanted w JOIN {TABLE} c ON c.text_sha256 = w.text_sha256 AND c.model_key = ?
                ORDER BY w.pos""",
            [key],
        ).pl()
    if rows.height != len(hashes):
        raise RuntimeError(f"embedding cache {key!r}: {len(hashes) - rows.height} vectors missing after encoding")
    return rows


def _vectors(rows: pl.DataFrame, encoder: Encoder):
    if encoder.sparse:
        import scipy.sparse as sp

        lengths = rows["indices"].list.len().to_numpy()
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = rows["indices"].explode().drop_nulls().to_numpy()
        data = rows["vector"].explode().drop_nulls().to_numpy()
        return sp.csr_matrix((data, indices, indptr), shape=(rows.height, encoder.dimension), dtype=np.float32)
    if rows.height == 0:
        return np.zeros((0, encoder.dimension), dtype=np.float32)
    dims = rows["vector"].list.len().unique().to_list()
    if len(dims) != 1:
        raise ValueError(f"embedding cache holds vectors of different lengths {sorted(dims)} under one model key")
    return rows["vector"].list.to_array(dims[0]).to_numpy().astype(np.float32, copy=False)
