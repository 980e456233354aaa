"""The embedding cache: a new corpus version embeds only its new chunk texts."""

import hashlib

import numpy as np
import scipy.sparse as sp

from mama_pipeline.retrieval._embedding_cache import Encoded, embed_with_cache
from mama_pipeline_tests.retrieval.fixtures import TEXTS


class CountingEncoder:
    """Deterministic vectors from the text hash; records every text it is asked to encode."""

    def __init__(self, sparse=False, prompt=""):
        self.sparse, self.dimension, self.max_seq_length = sparse, 64 if sparse else 8, 12
        self.prompt = prompt
        self.calls: list[list[str]] = []

    def model_key(self, role):
        return f"fake|{role}|{self.prompt}"

    def encode(self, texts, role):
        self.calls.append(list(texts))
        rows = [
            np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).random(self.dimension)
            for t in texts
        ]
        vecs = np.asarray(rows, dtype=np.float32)
        if self.sparse:
            vecs = sp.csr_matrix(np.where(vecs > 0.8, vecs, 0).astype(np.float32))
        return Encoded(vecs, np.array([len(t.split()) for t in texts], dtype=np.int32))


def test_new_corpus_version_embeds_only_changed_chunks(store):
    enc = CountingEncoder()
    first, stats = embed_with_cache(store, enc, TEXTS, "document")
    assert stats.encoded == len(TEXTS) and stats.cached == 0 and len(enc.calls) == 1

    v2 = list(TEXTS)
    v2[2] = v2[2] + " Seek help if the nipple is sore."
    v2[5] = "Heavy bleeding after birth is an emergency."
    v2.append("A new chunk about cord care.")
    enc.calls.clear()
    second, stats = embed_with_cache(store, enc, v2, "document")
    assert sorted(t for call in enc.calls for t in call) == sorted([v2[2], v2[5], v2[-1]])
    assert stats.encoded == 3 and stats.cached == len(TEXTS) - 2 and stats.encoder_calls == 1
    unchanged = [i for i in range(len(TEXTS)) if i not in (2, 5)]
    assert np.array_equal(first.vectors[unchanged], second.vectors[unchanged])
    assert np.array_equal(second.vectors, CountingEncoder().encode(v2, "document").vectors)


def test_cache_is_per_setup_and_counts_truncation(store):
    a, b = CountingEncoder(prompt="passage: "), CountingEncoder(prompt="")
    embed_with_cache(store, a, TEXTS, "document")
    _, stats = embed_with_cache(store, b, TEXTS, "document")
    assert stats.encoded == len(TEXTS)  # another prompt is another setup
    _, stats = embed_with_cache(store, b, TEXTS, "query")
    assert stats.encoded == len(TEXTS)
    assert stats.truncated == sum(len(t.split()) > 12 for t in TEXTS) > 0


def test_duplicate_texts_embedded_once_and_flushed_in_groups(store):
    enc = CountingEncoder()
    texts = TEXTS + TEXTS[:3]
    out, stats = embed_with_cache(store, enc, texts, "document", flush_every=3)
    assert stats.unique_texts == len(TEXTS) and stats.encoded == len(TEXTS)
    assert [len(c) for c in enc.calls] == [3, 3, 2]
    assert np.array_equal(out.vectors[-3:], out.vectors[:3])


def test_sparse_vectors_round_trip(store):
    enc = CountingEncoder(sparse=True)
    out, _ = embed_with_cache(store, enc, TEXTS, "document")
    again, stats = embed_with_cache(store, CountingEncoder(sparse=True), TEXTS, "document")
    assert stats.encoded == 0
    direct = CountingEncoder(sparse=True).encode(TEXTS, "document").vectors
    assert (again.vectors != direct).nnz == 0 and again.vectors.shape == (len(TEXTS), 64)
    assert (out.vectors != direct).nnz == 0
