"""Exact top-k search over dense (FAISS inner product) and sparse (dot product) vectors.

Ties at the cut are resolved by the rankings order (score desc, chunk id desc):
every chunk tying with the k-th score is returned, and :func:`order_rankings`
keeps the right ones.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.retrieval._retriever_rankings import hits_from_matrix

TIE_SLACK = 8  # extra ranks fetched so that most ties at the cut are seen in one pass


class ExactIndex:
    """Documents' vectors indexed once (FAISS for dense vectors, an inverted matrix for sparse ones), searched a
    slice of queries at a time."""

    def __init__(self, doc_vecs, chunk_ids: np.ndarray, sparse: bool):
        self.chunk_ids = chunk_ids
        self.sparse = sparse
        self.index = _inverted(doc_vecs) if sparse else _flat_ip(doc_vecs)

    def hits(self, query_vecs, k: int, query_ids: list[str]) -> pl.DataFrame:
        """Each query's top ``k`` hits (ties at the cut included), as :func:`faiss_hits` / :func:`sparse_hits`."""
        search = _sparse_search if self.sparse else _faiss_search
        return search(self.index, query_vecs, k, query_ids, self.chunk_ids)


def _flat_ip(doc_vecs: np.ndarray):
    """A ``faiss.IndexFlatIP`` of the documents; None when there are none."""
    import faiss

    if doc_vecs.shape[0] == 0:
        return None
    index = faiss.IndexFlatIP(doc_vecs.shape[1])
    index.add(np.ascontiguousarray(doc_vecs, dtype=np.float32))
    return index


def _inverted(doc_matrix):
    import scipy.sparse as sp

    return sp.csr_matrix(doc_matrix, dtype=np.float32).T.tocsr()  # dimension -> chunks


def faiss_hits(
    doc_vecs: np.ndarray, query_vecs: np.ndarray, k: int, query_ids: list[str], chunk_ids: np.ndarray
) -> pl.DataFrame:
    """Exact inner-product search with ``faiss.IndexFlatIP``; deeper re-search where the cut ties."""
    return _faiss_search(_flat_ip(doc_vecs), query_vecs, k, query_ids, chunk_ids)


def _faiss_search(index, query_vecs, k: int, query_ids: list[str], chunk_ids: np.ndarray) -> pl.DataFrame:
    n_docs = 0 if index is None else index.ntotal
    if n_docs == 0 or not query_ids:
        return hits_from_matrix([], chunk_ids, np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64))
    queries = np.ascontiguousarray(query_vecs, dtype=np.float32)
    k = min(k, n_docs)
    todo = np.arange(len(query_ids))
    depth = min(n_docs, k + TIE_SLACK)
    frames = []
    while todo.size:
        scores, idx = index.search(queries[todo], depth)
        tied = np.zeros(todo.size, dtype=bool) if depth >= n_docs else scores[:, k - 1] == scores[:, depth - 1]
        done = todo[~tied]
        frames.append(hits_from_matrix([query_ids[i] for i in done], chunk_ids, scores[~tied], idx[~tied]))
        todo, depth = todo[tied], min(n_docs, depth * 4)
    return pl.concat(frames)


def sparse_hits(
    doc_matrix, query_matrix, k: int, query_ids: list[str], chunk_ids: np.ndarray, batch: int = 256
) -> pl.DataFrame:
    """Exact dot-product search of sparse query rows against sparse document rows.

    Chunks sharing no dimension with the query (score 0) are not hits.
    """
    return _sparse_search(_inverted(doc_matrix), query_matrix, k, query_ids, chunk_ids, batch)


def _sparse_search(inverted, query_matrix, k: int, query_ids: list[str], chunk_ids: np.ndarray, batch: int = 256):
    import scipy.sparse as sp

    queries = sp.csr_matrix(query_matrix, dtype=np.float32)
    n_docs = inverted.shape[1]
    frames = []
    for start in range(0, queries.shape[0], batch):
        block = (queries[start : start + batch] @ inverted).toarray()
        kk = min(k, n_docs)
        kth = np.partition(block, n_docs - kk, axis=1)[:, n_docs - kk] if n_docs else np.zeros(block.shape[0])
        rows, cols = np.nonzero((block >= kth[:, None]) & (block > 0))
        frames.append(
            pl.DataFrame(
                {
                    "query_id": np.asarray(query_ids[start : start + batch], dtype=object)[rows],
                    "chunk_id": chunk_ids[cols],
                    "score": block[rows, cols].astype(np.float64),
                },
                schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64},
            )
        )
    if not frames:
        return hits_from_matrix([], chunk_ids, np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int64))
    return pl.concat(frames)
