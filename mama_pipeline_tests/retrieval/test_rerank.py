"""The rerank retriever kind: endpoint (fault-injecting server), CrossEncoder and rerankers backends, cache, failures."""

import hashlib
import json

import numpy as np
import polars as pl
import pytest

from mama_pipeline.retrieval._endpoint_client import MalformedAnswer
from mama_pipeline.retrieval._kinds.rerank_kind import RerankEndpointBackend
from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval._rerank import GroupScores
from mama_pipeline.retrieval._rerank_backends import parse_rerank_answer, rerank_body, untrained_minilm_cross_encoder
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunks_frame, queries_frame
from mama_pipeline_tests.support.processes import free_port


def first_stage(chunks: pl.DataFrame, queries: pl.DataFrame, name: str = "first") -> pl.DataFrame:
    """A stored ranking of every chunk for every query (rank by chunk order)."""
    return (
        queries.select("query_id")
        .join(chunks.select("chunk_id").with_row_index("i"), how="cross")
        .with_columns(
            retriever=pl.lit(name), rank=(pl.col("i") + 1).cast(pl.Int32), score=(100 - pl.col("i")).cast(pl.Float64)
        )
        .select("query_id", "retriever", "rank", "chunk_id", "score")
    )


def settings(backend: dict, depth: int = 6) -> RetrievalSettings:
    return RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "first", "kind": "bm25"},
                {"name": "rr", "kind": "rerank", "params": {"run": "first", "depth": depth, "backend": backend}},
            ]
        }
    )


def run(store, tmp_path, spec, chunks, queries, depth=4):
    env = RetrievalEnv(store, tmp_path, lambda p: tmp_path / p, lambda names, ids: first_stage(chunks, queries))
    return run_retriever(spec, chunks, queries, depth, env)


def fake_score(query: str, doc: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{query}\0{doc}".encode()).digest()[:4], "big") / 2**32


def endpoint(url: str, **kw) -> dict:
    return {
        "type": "endpoint",
        "base_url": url,
        "model": "fake-rerank",
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
        "timeout_s": 1.0,
        **kw,
    }


def test_endpoint_reranks_top_candidates_caches_and_sends_the_key(store, tmp_path, fake_llm, monkeypatch):
    monkeypatch.setenv("TEST_RERANK_KEY", "secret-rr")
    fake_llm.reset()
    spec = settings(endpoint(fake_llm.url, api_key_env="TEST_RERANK_KEY")).retriever("rr")
    chunks, queries = chunks_frame(), queries_frame()
    out = run(store, tmp_path, spec, chunks, queries)
    stats = fake_llm.stats()
    assert stats["rerank_calls"] == queries.height and stats["reranked_documents"] == 6 * queries.height
    assert stats["bearer_digests"] == [hashlib.sha256(b"secret-rr").hexdigest()[:12]]
    assert "secret-rr" not in json.dumps(out.metadata, default=str)
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    for qid, qtext in queries.select("query_id", "query_text").iter_rows():
        got = out.rankings.filter(pl.col("query_id") == qid)
        # only the first stage's top 6 are candidates; the reranked top 4 are kept, by the endpoint's scores
        candidates = chunks["chunk_id"].to_list()[:6]
        expected = sorted(candidates, key=lambda c: -fake_score(qtext, texts[c]))[:4]
        assert got["chunk_id"].to_list() == expected
        np.testing.assert_allclose(got["score"].to_numpy(), [fake_score(qtext, texts[c]) for c in expected])
    assert out.metadata["queries_failed"] == 0 and out.metadata["pairs_scored_now"] == 6 * queries.height

    again = run(store, tmp_path, spec, chunks, queries)
    assert fake_llm.stats()["rerank_calls"] == queries.height  # a re-run asks nothing
    assert again.rankings.equals(out.rankings) and again.metadata["pairs_from_cache"] == 6 * queries.height


def test_tei_requests_and_small_requests_give_the_same_ranking(store, tmp_path, fake_llm):
    chunks, queries = chunks_frame(), queries_frame()
    base = run(store, tmp_path, settings(endpoint(fake_llm.url)).retriever("rr"), chunks, queries).rankings
    fake_llm.reset()
    spec = settings(endpoint(fake_llm.url + "/", request_format="tei", documents_per_request=4)).retriever("rr")
    tei = run(store, tmp_path, spec, chunks, queries)
    assert fake_llm.stats()["rerank_calls"] == 2 * queries.height  # 6 candidates in requests of 4 + 2
    assert tei.rankings.equals(base)


FAULTS = {
    "q_00001": "[[fault:500]]",  # every attempt fails
    "q_00002": "[[fault:malformedx1]]",  # one bad answer, then a good one: recovered
    "q_00003": "[[fault:schema]]",  # a document's score always missing
    "q_00004": "[[fault:slow=3]]",  # past the client timeout on every attempt
    "q_00005": "[[fault:400]]",  # a client error: not retried
}


def test_endpoint_faults_never_give_default_scores(store, tmp_path, fake_llm):
    fake_llm.reset()
    chunks = chunks_frame()
    queries = queries_frame().with_columns(
        query_text=pl.col("query_text") + " " + pl.col("query_id").replace_strict(FAULTS)
    )
    spec = settings(endpoint(fake_llm.url, max_retries=2, timeout_s=0.5)).retriever("rr")
    out = run(store, tmp_path, spec, chunks, queries)
    assert out.rankings["query_id"].unique().sort().to_list() == ["q_00002"]
    assert out.metadata["queries_failed"] == 4 and out.metadata["queries_without_hits"] == 4
    failures = store.read_table("rerank_failures").sort("query_id")
    assert failures["query_id"].to_list() == ["q_00001", "q_00003", "q_00004", "q_00005"]
    errors = dict(failures.select("query_id", "error").iter_rows())
    assert "HTTP 500" in errors["q_00001"] and "gave up after 3 attempts" in errors["q_00001"]
    assert "missing" in errors["q_00003"] and "Timeout" in errors["q_00004"]
    assert "HTTP 400" in errors["q_00005"] and "gave up" not in errors["q_00005"]
    assert store.query("select count(*) n from rerank_cache")["n"][0] == 6  # only the recovered query's pairs
    stats = fake_llm.stats()
    assert stats["fault:400"] == 1 and stats["fault:500"] == 3

    again = run(store, tmp_path, spec, chunks, queries)  # failed queries are asked again, the good one is not
    assert again.rankings.equals(out.rankings)
    assert fake_llm.stats()["fault:500"] == 6 and fake_llm.stats()["fault:malformed"] == 1


def test_an_endpoint_that_refuses_connections_fails_its_queries_after_the_retries(store, tmp_path):
    chunks, queries = chunks_frame(), queries_frame()
    spec = settings(endpoint(f"http://127.0.0.1:{free_port()}/v1", max_retries=1)).retriever("rr")
    out = run(store, tmp_path, spec, chunks, queries)
    assert out.rankings.height == 0 and out.metadata["queries_failed"] == queries.height
    errors = store.read_table("rerank_failures")["error"].to_list()
    assert len(errors) == queries.height and all(
        "ConnectError" in e and "gave up after 2 attempts" in e for e in errors
    )


def test_rerank_answer_parser_rejects_what_it_cannot_use():
    ok = parse_rerank_answer(
        json.dumps({"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]}).encode(),
        2,
    )
    assert ok.tolist() == [0.9, 0.2]
    assert parse_rerank_answer(b'[{"index": 0, "score": 3}]', 1).tolist() == [3.0]
    for bad in (
        b"{",
        b'{"results": 1}',
        b'[{"index": 0, "score": 1}, {"index": 0, "score": 2}]',
        b'[{"index": 2, "score": 1}]',
        b'[{"index": 0, "score": "x"}]',
        b'[{"index": 0, "score": true}]',
        b'[{"index": 0}]',
        b"[]",
        b'[{"index": 0, "score": NaN}]',
        b'[{"index": true, "score": 1}]',
        b'[{"index": -1, "score": 1}]',
        b'["x"]',
        b'[{"index": 0, "relevance_score": null, "score": 1}]',
        b'[{"index": 0, "score": 1' + b"0" * 400 + b"}]",
    ):
        with pytest.raises(MalformedAnswer):
            parse_rerank_answer(bad, 1)
    # a full answer in any order, ints and floats, Cohere and TEI keys
    many = [{"index": i, "relevance_score": float(i) / 10 if i % 2 else i} for i in (3, 0, 2, 1)]
    assert parse_rerank_answer(json.dumps({"results": many}).encode(), 4).tolist() == [0.0, 0.1, 2.0, 0.3]
    with pytest.raises(MalformedAnswer, match="scores for 1 of 5 documents missing"):
        parse_rerank_answer(json.dumps({"results": many}).encode(), 5)
    with pytest.raises(MalformedAnswer, match="bad or repeated index 3"):
        parse_rerank_answer(json.dumps([*many, {"index": 3, "score": 1}]).encode(), 5)


LONG = "Oxytocin after birth prevents bleeding; " * 20


@pytest.fixture(scope="module")
def untrained():
    return untrained_minilm_cross_encoder(max_length=64)


def test_cross_encoder_matches_a_bare_predict_and_audits_truncation(store, tmp_path, untrained):
    chunks, queries = chunks_frame(TEXTS[:5] + [LONG]), queries_frame()
    spec = settings({"type": "cross_encoder", "untrained_minilm": True, "max_length": 64, "batch_size": 4}).retriever(
        "rr"
    )
    out = run(store, tmp_path, spec, chunks, queries)
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    qtexts = dict(queries.select("query_id", "query_text").iter_rows())
    pairs = [(qtexts[q], texts[c]) for q, c in out.rankings.select("query_id", "chunk_id").iter_rows()]
    expected = untrained.predict(pairs, batch_size=4)
    np.testing.assert_allclose(out.rankings["score"].to_numpy(), expected, rtol=1e-5, atol=1e-6)
    assert out.metadata["max_seq_length"] == 64
    assert out.metadata["pairs_truncated"] == queries.height  # the one long chunk, once per query
    assert "not meaningful" in out.metadata["model"]
    again = run(store, tmp_path, spec, chunks, queries)
    assert again.metadata["pairs_scored_now"] == 0 and again.rankings.equals(out.rankings)


def test_rerankers_library_backend_on_a_local_cross_encoder_folder(store, tmp_path, untrained):
    folder = tmp_path / "ce"
    untrained.save(str(folder))
    chunks, queries = chunks_frame(), queries_frame()
    spec = settings({"type": "rerankers", "model_type": "cross-encoder", "model_path": "ce"}).retriever("rr")
    out = run(store, tmp_path, spec, chunks, queries)
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    qtexts = dict(queries.select("query_id", "query_text").iter_rows())
    pairs = [(qtexts[q], texts[c]) for q, c in out.rankings.select("query_id", "chunk_id").iter_rows()]
    # rerankers returns the raw logit; the CrossEncoder applies its sigmoid
    logits = out.rankings["score"].to_numpy()
    np.testing.assert_allclose(1 / (1 + np.exp(-logits)), untrained.predict(pairs), rtol=1e-4, atol=1e-5)
    assert out.rankings.group_by("query_id").len()["len"].to_list() == [4] * queries.height


def test_rerank_settings_are_checked():
    ok = settings(endpoint("http://x/v1"), depth=50)
    assert ok.required_depth("first") == 50  # the first stage is ranked as deep as the reranker reads
    bad = [
        {"name": "rr", "kind": "rerank", "params": {"run": "nope", "backend": endpoint("http://x/v1")}},
        {"name": "rr", "kind": "rerank", "params": {"run": "rr", "backend": endpoint("http://x/v1")}},
        {"name": "rr", "kind": "rerank", "params": {"run": "first", "backend": {"type": "cross_encoder"}}},
        {
            "name": "rr",
            "kind": "rerank",
            "params": {"run": "first", "backend": {"type": "cross_encoder", "model_id": "org/ce"}},
        },
        {
            "name": "rr",
            "kind": "rerank",
            "params": {"run": "first", "backend": {"type": "rerankers", "model_type": "t5"}},
        },
    ]
    for entry in bad:
        with pytest.raises(ValueError):
            RetrievalSettings.model_validate({"retrievers": [{"name": "first", "kind": "bm25"}, entry]})
    chained = {
        "retrievers": [
            {"name": "first", "kind": "bm25"},
            {"name": "rr", "kind": "rerank", "params": {"run": "first", "backend": endpoint("http://x")}},
            {"name": "rr2", "kind": "rerank", "params": {"run": "rr", "backend": endpoint("http://x")}},
        ]
    }
    with pytest.raises(ValueError, match="not a rerank"):
        RetrievalSettings.model_validate(chained)


def test_request_bodies_joined_from_encoded_pieces_are_the_documented_json():
    texts = ["plain", 'quote " and backslash \\', "Swahili: mama na mtoto – ñ", "line\nbreak\t{}[]"]
    pieces = [json.dumps(t).encode() for t in texts]
    query = 'BP "≥140/90"?'
    docs = RerankEndpointBackend(type="endpoint", base_url="http://x/v1", model='m"1')
    assert json.loads(rerank_body(docs, json.dumps(query).encode(), pieces)) == {
        "model": 'm"1',
        "query": query,
        "documents": texts,
        "top_n": 4,
        "return_documents": False,
    }
    tei = docs.model_copy(update={"request_format": "tei"})
    assert json.loads(rerank_body(tei, json.dumps(query).encode(), pieces)) == {
        "query": query,
        "texts": texts,
        "raw_scores": False,
        "return_text": False,
    }


class FakeScorer:
    """Scores with ``fake_score`` in the calling thread, noting how many texts were hashed when each group arrived."""

    model_key, label, max_length = "fake|scorer", "fake", None

    def __init__(self, hashed: list[str]):
        self.hashed, self.seen = hashed, []

    def score(self, groups, done):
        for i, group in enumerate(groups):
            self.seen.append(len(self.hashed))
            done(i, GroupScores(np.array([fake_score(group.query, t) for t in group.texts])))


def test_pairs_are_prepared_as_the_scorer_asks_and_scored_once(store, monkeypatch):
    from mama_pipeline.retrieval import _rerank as rerank

    hashed: list[str] = []
    monkeypatch.setattr(
        rerank, "text_sha256", lambda text: hashed.append(text) or hashlib.sha256(text.encode()).hexdigest()
    )
    texts = {f"c{j}": f"chunk text {j}" for j in range(20)} | {"c20": "chunk text 0"}  # c20 repeats c0's text
    rows = [(f"q{i}", f"query {i}", f"c{(2 * i + k) % 20}") for i in range(10) for k in range(4)]
    rows += [
        ("q0", "query 0", "c20"),  # the same pair as (q0, c0)
        *[("q10", "query 0", c) for c in ("c0", "c1", "c5")],  # q0's text again, with one new chunk
        *[("q11", "query 1", c) for c in ("c2", "c3")],
    ]  # q1's text again, nothing new
    candidates = (
        pl.DataFrame(rows, schema=["query_id", "query_text", "chunk_id"], orient="row")
        .with_columns(text=pl.col("chunk_id").replace_strict(texts))
        .sample(fraction=1.0, shuffle=True, seed=3)
    )

    rerank.rerank_hits(
        candidates.filter(pl.col("query_id").is_in(["q2", "q3"])), FakeScorer([]), store, log=lambda m: None
    )
    hashed.clear()
    scorer = FakeScorer(hashed)
    hits, failed, stats = rerank.rerank_hits(
        candidates, scorer, store, log=lambda m: None, flush_every=5, batch_queries=2
    )
    assert not failed
    assert hits.select("query_id", "chunk_id").equals(candidates.select("query_id", "chunk_id"))  # same rows, order
    expected = [fake_score(q, t) for q, t in candidates.select("query_text", "text").iter_rows()]
    np.testing.assert_allclose(hits["score"].to_numpy(), expected)
    assert stats.pairs == 41 and stats.from_cache == 8 and stats.scored_now == 33
    assert scorer.seen[0] < len(hashed)  # the first group was scored before every chunk text was hashed
    assert len(hashed) == 12 + 21  # each query and each chunk hashed once
    cache = store.query("select count(*) n, count(distinct (query_sha256, text_sha256)) d from rerank_cache")
    assert cache.rows() == [(41, 41)]  # every pair scored and written once
