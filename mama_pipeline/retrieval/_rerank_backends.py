"""The reranking backends: a sentence-transformers CrossEncoder, a ``/rerank`` endpoint, the ``rerankers`` library.

Each turns groups of (query, chunk texts) into scores for :mod:`rerank`. Local
models load inside these functions (torch and transformers are heavy imports).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from mama_pipeline.retrieval._encoders import ModelLoadError, folder_digest, model_source
from mama_pipeline.retrieval._endpoint_client import EndpointRequestError, JsonPoster, MalformedAnswer, with_retries
from mama_pipeline.retrieval._kinds.dense_kind import default_dense_folder
from mama_pipeline.retrieval._rerank import GroupScores, PairGroup
from mama_pipeline.retrieval._retriever_params import EncoderModel, EndpointParams

BLOCK_PAIRS = 2048  # pairs per CrossEncoder.predict call (progress and cache flushes between blocks)
UNTRAINED_SEED = 0


def _key(kind: str, identity: str, setup: dict) -> str:
    digest = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()[:16]
    return f"{kind}|{identity}|{digest}"


def untrained_minilm_cross_encoder(max_length: int | None = None, device: str = "cpu"):
    """all-MiniLM-L6-v2 from its wheel with a fresh one-logit head (seeded): plumbing only, scores not meaningful."""
    import torch
    from sentence_transformers import CrossEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(UNTRAINED_SEED)
        return CrossEncoder(str(default_dense_folder()), num_labels=1, max_length=max_length, device=device)


class CrossEncoderScorer:
    def __init__(self, params: EncoderModel, resolve: Callable[[str], Path]):
        self.params = params
        try:
            if params.untrained_minilm:
                folder = default_dense_folder()
                identity = f"all-MiniLM-L6-v2+untrained-head-seed{UNTRAINED_SEED}@sha256:{folder_digest(folder)[:16]}"
                self.model = untrained_minilm_cross_encoder(params.max_length, params.device)
                self.label = f"untrained cross-encoder from {folder} (scores not meaningful)"
            else:
                from sentence_transformers import CrossEncoder

                source = model_source(params, default_dense_folder, resolve)
                identity, self.label = source.identity, source.label
                self.model = CrossEncoder(
                    source.location, revision=source.revision, max_length=params.max_length, device=params.device
                )
        except Exception as exc:  # noqa: BLE001 - any loader failure is reported with the model's name
            raise ModelLoadError(
                f"cross-encoder {params.model_path or params.model_id or 'untrained MiniLM'} "
                f"could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        self.max_length = self.model.max_seq_length
        self.model_key = _key("cross_encoder", identity, {"max_length": self.max_length})

    def score(self, groups: Iterable[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        block: list[PairGroup] = []
        first = n = 0
        for i, group in enumerate(groups):
            if block and n + len(group.texts) > BLOCK_PAIRS:
                self._predict(first, block, done)
                block, first, n = [], i, 0
            block.append(group)
            n += len(group.texts)
        if block:
            self._predict(first, block, done)

    def _predict(self, first: int, block: list[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        """Score a block of groups (numbered from ``first``) in one ``predict`` call."""
        queries = [g.query for g in block for _ in g.texts]
        texts = [t for g in block for t in g.texts]
        scores = self.model.predict(
            list(zip(queries, texts)), batch_size=self.params.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        ids = self.model.tokenizer(queries, texts, add_special_tokens=True, truncation=False, verbose=False)
        tokens = np.fromiter((len(x) for x in ids["input_ids"]), dtype=np.int32, count=len(texts))
        offset = 0
        for i, g in enumerate(block, first):
            k = len(g.texts)
            done(i, GroupScores(np.asarray(scores[offset : offset + k], dtype=np.float64), tokens[offset : offset + k]))
            offset += k


class EndpointScorer:
    """``POST {base_url}{path}``: one request per query (or per ``documents_per_request`` chunks of it).

    Each distinct text is JSON-encoded once per run and request bodies are joined from those pieces, so a
    request costs the client little more than its bytes on the wire.
    """

    max_length = None  # the server truncates by its own rules

    def __init__(self, params: EndpointParams, transport: Any = None):
        self.params = params
        self.label = f"{params.base_url.rstrip('/')}{params.path}|{params.model}"
        self.model_key = _key("rerank_endpoint", self.label, {"request_format": params.request_format})
        self._transport = transport  # an httpx transport (tests); None: the network
        self._rng = random.Random()
        self.calls = 0

    def score(self, groups: Iterable[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        asyncio.run(self._score_all(groups, done))

    async def _score_all(self, groups: Iterable[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        poster = JsonPoster(self.params, self._transport)
        sem = asyncio.Semaphore(self.params.concurrency)
        # groups taken from ``groups`` but not finished: enough to keep every request slot busy (also while some
        # wait out a retry's backoff), few enough that the rest is prepared while these are in flight
        taken = asyncio.Semaphore(2 * self.params.concurrency)
        encoded = _JsonPieces()

        def body(query: str, texts: list[str]) -> Callable[[], bytes]:
            return lambda: rerank_body(self.params, encoded[query], [encoded[t] for t in texts])

        async def one(i: int, group: PairGroup) -> None:
            size = self.params.documents_per_request or len(group.texts)
            parts = [group.texts[s : s + size] for s in range(0, len(group.texts), size)]
            try:
                if len(parts) == 1:
                    scores = await self._request(poster, sem, body(group.query, parts[0]), len(parts[0]))
                else:
                    scores = np.concatenate(
                        await asyncio.gather(*(self._request(poster, sem, body(group.query, p), len(p)) for p in parts))
                    )
            except EndpointRequestError as exc:
                done(i, GroupScores(error=str(exc)))
            else:
                done(i, GroupScores(scores))
            finally:
                taken.release()

        try:
            queue = iter(groups)
            async with asyncio.TaskGroup() as tasks:
                for i in itertools.count():
                    await taken.acquire()
                    group = next(queue, None)  # may prepare the next batch of groups, in this thread
                    if group is None:
                        break
                    tasks.create_task(one(i, group))
                    await asyncio.sleep(0)  # its request goes out before the next group is taken
        finally:
            await poster.close()

    async def _request(
        self, poster: JsonPoster, sem: asyncio.Semaphore, make_body: Callable[[], bytes], n: int
    ) -> np.ndarray:
        body: list[bytes] = []  # made once a request slot is free: bodies of queries still queued take no memory

        async def send() -> bytes:
            if not body:
                body.append(make_body())
            return await poster.post(self.params.path, body[0])

        def count() -> None:
            self.calls += 1

        return await with_retries(
            self.params, sem, self._rng, send, count, lambda answer: parse_rerank_answer(answer, n)
        )


def rerank_body(params: EndpointParams, query: bytes, texts: list[bytes]) -> bytes:
    """The request body from a JSON-encoded query and JSON-encoded texts (UTF-8 bytes): vLLM/Infinity/Cohere
    (``documents``) or TEI (``texts``) shape."""
    docs = b",".join(texts)
    if params.request_format == "tei":
        return b"".join([b'{"query":', query, b',"texts":[', docs, b'],"raw_scores":false,"return_text":false}'])
    head = f'{{"model":{json.dumps(params.model)},"query":'.encode()
    return b"".join([head, query, b',"documents":[', docs, b'],"top_n":%d,"return_documents":false}' % len(texts)])


class _JsonPieces(dict):
    """Text -> its JSON string literal as UTF-8 bytes, encoded on first use."""

    def __missing__(self, text: str) -> bytes:
        piece = self[text] = json.dumps(text).encode()
        return piece


def parse_rerank_answer(content: bytes, n: int) -> np.ndarray:
    """Scores in document order from a ``{"results": [{"index", "relevance_score"}]}`` (vLLM, Infinity,
    Cohere) or ``[{"index", "score"}]`` (TEI) answer; anything else is :class:`MalformedAnswer`."""
    try:
        answer = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        raise MalformedAnswer(f"not JSON: {content[:80]!r}") from None
    items = answer.get("results") if isinstance(answer, dict) else answer
    if not isinstance(items, list):
        raise MalformedAnswer(f"no results list in {str(answer)[:80]!r}")
    scores = _complete_scores(items, n)
    return scores if scores is not None else _checked_scores(items, n)


def _complete_scores(items: list, n: int) -> np.ndarray | None:
    """The scores when ``items`` are exactly one finite score for each of the ``n`` documents (the common case,
    checked with arrays); None when anything is off, for :func:`_checked_scores` to name."""
    try:
        index = [item["index"] for item in items]
        value = [item["relevance_score"] if "relevance_score" in item else item["score"] for item in items]
        if not (0 < n == len(index) and set(map(type, index)) == {int} and set(map(type, value)) <= {int, float}):
            return None
        order, scores = np.asarray(index, dtype=np.int64), np.asarray(value, dtype=np.float64)
    except (TypeError, KeyError, OverflowError):
        return None
    if (
        order.min() < 0
        or order.max() >= n
        or not np.isfinite(scores).all()
        or np.bincount(order, minlength=n).max() > 1
    ):
        return None
    out = np.empty(n, dtype=np.float64)
    out[order] = scores
    return out


def _checked_scores(items: list, n: int) -> np.ndarray:
    """Item by item, naming the first thing that cannot be used."""
    scores: list[float | None] = [None] * n
    for item in items:
        if not isinstance(item, dict):
            raise MalformedAnswer(f"result {str(item)[:40]!r} is not an object")
        index = item.get("index")
        value = item.get("relevance_score", item.get("score"))
        if type(index) is not int or not 0 <= index < n or scores[index] is not None:
            raise MalformedAnswer(f"bad or repeated index {index!r} for {n} documents")
        try:
            finite = type(value) in (int, float) and math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            finite = False
        if not finite:
            raise MalformedAnswer(f"score {value!r} of document {index} is not a finite number")
        scores[index] = float(value)
    if None in scores:
        raise MalformedAnswer(f"scores for {scores.count(None)} of {n} documents missing")
    return np.asarray(scores, dtype=np.float64)


class RerankersScorer:
    """A ``rerankers`` library model (``Reranker(path, model_type=...)``); a hub id is fetched at its pinned commit."""

    def __init__(self, params: EncoderModel, resolve: Callable[[str], Path]):
        self.params = params
        source = model_source(params, default_dense_folder, resolve)
        try:
            location = source.location
            if source.revision:
                from huggingface_hub import snapshot_download

                location = snapshot_download(source.location, revision=source.revision)
            from rerankers import Reranker

            self.ranker = Reranker(
                location, model_type=params.model_type, device=params.device, batch_size=params.batch_size, verbose=0
            )
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(
                f"rerankers model {source.label} ({params.model_type}) could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        self.label = f"{source.label} ({params.model_type})"
        tokenizer = getattr(self.ranker, "tokenizer", None)
        self._tokenizer = tokenizer if callable(tokenizer) else None
        limit = getattr(tokenizer, "model_max_length", None) if self._tokenizer else None
        self.max_length = limit if isinstance(limit, int) and limit < 1_000_000 else None  # huge: "no limit" sentinel
        self.model_key = _key("rerankers", source.identity, {"model_type": params.model_type})

    def score(self, groups: Iterable[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        for i, g in enumerate(groups):
            ranked = self.ranker.rank(g.query, g.texts, doc_ids=list(range(len(g.texts))))
            scores = np.full(len(g.texts), np.nan)
            for result in ranked.results:
                scores[int(result.document.doc_id)] = float(result.score)
            tokens = None
            if self._tokenizer is not None:
                ids = self._tokenizer([g.query] * len(g.texts), g.texts, truncation=False, verbose=False)["input_ids"]
                tokens = np.fromiter((len(x) for x in ids), dtype=np.int32, count=len(g.texts))
            done(i, GroupScores(scores, tokens))


def load_scorer(params, resolve: Callable[[str], Path]):
    if params.type == "cross_encoder":
        return CrossEncoderScorer(params, resolve)
    if params.type == "endpoint":
        return EndpointScorer(params)
    return RerankersScorer(params, resolve)
