"""FAISS exact inner-product search and sparse dot-product search against brute-force numpy."""

import numpy as np
import polars as pl
import scipy.sparse as sp

from mama_pipeline.retrieval._exact_search import ExactIndex, faiss_hits, sparse_hits
from mama_pipeline.retrieval._retriever_rankings import order_rankings


def brute_force(docs: np.ndarray, queries: np.ndarray, k: int, qids, cids) -> pl.DataFrame:
    scores = queries.astype(np.float64) @ docs.astype(np.float64).T
    rows = []
    for qi, qid in enumerate(qids):
        order = sorted(range(len(cids)), key=lambda j: (-scores[qi, j], [-ord(c) for c in cids[j]]))[:k]
        rows += [(qid, j, cids[j], scores[qi, j]) for j in order]
    return pl.DataFrame(rows, schema=["query_id", "pos", "chunk_id", "score"], orient="row")


def test_faiss_equals_brute_force_numpy():
    rng = np.random.default_rng(7)
    docs = rng.standard_normal((500, 32)).astype(np.float32)
    queries = rng.standard_normal((40, 32)).astype(np.float32)
    cids = np.array([f"c{i:04d}" for i in range(500)], dtype=object)
    qids = [f"q{i:03d}" for i in range(40)]
    ours = order_rankings(faiss_hits(docs, queries, 10, qids, cids), "dense", 10)
    ref = brute_force(docs, queries, 10, qids, list(cids))
    assert ours["chunk_id"].to_list() == ref["chunk_id"].to_list()
    np.testing.assert_allclose(ours["score"].to_numpy(), ref["score"].to_numpy(), rtol=1e-5, atol=1e-5)


def test_faiss_ties_at_the_cut_keep_the_largest_chunk_ids():
    """30 identical vectors tie; the cut at 3 must keep the 3 largest ids, wherever they sit in the index."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal(16).astype(np.float32)
    docs = np.vstack([np.tile(base, (30, 1)), rng.standard_normal((20, 16)).astype(np.float32) * 0.01])
    cids = np.array([f"t{i:02d}" for i in range(30)] + [f"n{i:02d}" for i in range(20)], dtype=object)
    perm = rng.permutation(50)
    out = order_rankings(faiss_hits(docs[perm], base[None, :], 3, ["q"], cids[perm]), "dense", 3)
    assert out["chunk_id"].to_list() == ["t29", "t28", "t27"]


def test_sparse_equals_dense_brute_force():
    docs = sp.random(300, 1000, density=0.02, random_state=3, dtype=np.float32, format="csr")
    queries = sp.random(25, 1000, density=0.05, random_state=4, dtype=np.float32, format="csr")
    cids = np.array([f"c{i:04d}" for i in range(300)], dtype=object)
    qids = [f"q{i:02d}" for i in range(25)]
    ours = order_rankings(sparse_hits(docs, queries, 5, qids, cids, batch=7), "sparse", 5)
    ref = brute_force(docs.toarray(), queries.toarray(), 5, qids, list(cids)).filter(pl.col("score") > 0)
    assert ours["chunk_id"].to_list() == ref["chunk_id"].to_list()
    np.testing.assert_allclose(ours["score"].to_numpy(), ref["score"].to_numpy(), rtol=1e-5)


def test_sparse_query_sharing_no_dimension_has_no_hits():
    docs = sp.csr_matrix(np.array([[1.0, 0.0], [0.5, 0.0]], dtype=np.float32))
    queries = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32))
    out = sparse_hits(docs, queries, 5, ["none", "some"], np.array(["a", "b"], dtype=object))
    assert out.filter(pl.col("query_id") == "none").is_empty()
    assert sorted(out.filter(pl.col("query_id") == "some")["chunk_id"]) == ["a", "b"]


def test_an_index_searched_in_slices_finds_what_one_search_finds():
    rng = np.random.default_rng(11)
    docs = rng.standard_normal((200, 16)).astype(np.float32)
    queries = rng.standard_normal((9, 16)).astype(np.float32)
    cids = np.array([f"c{i:04d}" for i in range(200)], dtype=object)
    qids = [f"q{i}" for i in range(9)]
    index = ExactIndex(docs, cids, sparse=False)
    sliced = pl.concat([index.hits(queries[i : i + 4], 5, qids[i : i + 4]) for i in range(0, 9, 4)])
    assert order_rankings(sliced, "d", 5).equals(order_rankings(faiss_hits(docs, queries, 5, qids, cids), "d", 5))
    sdocs = sp.random(100, 300, density=0.05, random_state=5, dtype=np.float32, format="csr")
    squeries = sp.random(9, 300, density=0.1, random_state=6, dtype=np.float32, format="csr")
    sindex = ExactIndex(sdocs, cids[:100], sparse=True)
    ssliced = pl.concat([sindex.hits(squeries[i : i + 4], 5, qids[i : i + 4]) for i in range(0, 9, 4)])
    whole = sparse_hits(sdocs, squeries, 5, qids, cids[:100])
    assert order_rankings(ssliced, "s", 5).equals(order_rankings(whole, "s", 5))
    assert ExactIndex(docs[:0], cids[:0], sparse=False).hits(queries, 5, qids).is_empty()
