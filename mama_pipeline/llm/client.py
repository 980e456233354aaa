"""One OpenAI-compatible client for every LLM stage.

Answers are requested as JSON constrained by a pydantic model's schema, validated,
and cached in DuckDB under a content-addressed key. Transport errors are retried
with exponential backoff and jitter (``Retry-After`` honoured on 429); an answer
that cannot be parsed or violates the schema is re-asked a bounded number of
times and then recorded as failed with its raw text (served from the cache
afterwards unless ``retry_parse_failed``). An HTTP 200 whose body is an error
object is a transport failure. Endpoints that stop answering are marked down,
probed and resumed (:mod:`mama_pipeline.llm.endpoints`). A failure is never turned
into a value: callers get every failure listed in the :class:`RunReport`.
Every ``flush_every_s`` new answers are appended to an fsync'd answer log, a cheap
append whose cost does not grow with the cache; the log is folded into the DuckDB
cache in batches (spaced out when writes grow slow), all before a run returns, and a
killed process's log is folded by the next run before it looks anything up
(:mod:`mama_pipeline.llm.answer_log`). A kill thus re-asks what was in flight and
the answers of about the last ``flush_every_s``. A caller that asks in many batches
and stores each batch's results uses :meth:`LLMClient.run_ahead`: one stream of
requests, the next batch asked while the caller stores one, each handed over once its
answers are in the log. Plain-http
endpoints are reached through a lean transport (:mod:`mama_pipeline.llm.http_transport`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import polars as pl
from pydantic import BaseModel, ValidationError

from mama_pipeline.common.thread_priority import background_thread
from mama_pipeline.llm.answer_log import (
    CACHE_TABLE,
    AnswerLog,
    LogFile,
    ensure_cache_tables,
    fold,
    log_dir,
    now_utc,
    recover,
)
from mama_pipeline.llm.budget import BudgetExceeded, budget_breach
from mama_pipeline.llm.endpoints import EndpointPool, EndpointsDown, Outage, backoff_delay
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.llm.tokens import TokenCounter, counter_for
from mama_pipeline.store import Store

if TYPE_CHECKING:
    import openai

NO_KEY = "no-key-configured"  # sent when the key variable is unset (servers that ignore keys)
RETRY_PARSE_FAILED_ENV = "MAMA_RETRY_PARSE_FAILED"  # "1": every stage re-asks cached parse failures
POOL_SIZE = 8  # concurrent requests per httpx connection pool (https or proxied endpoints)
T = TypeVar("T")
WRITE_SHARE = 0.1  # folds into the DuckDB cache are spaced so that they take about this share of a run's time at most


@dataclass(frozen=True)
class LLMRequest:
    item_id: str
    messages: list[dict[str, str]]


@dataclass
class LLMResult:
    item_id: str
    cache_key: str
    status: str  # ok | parse_failed | transport_failed
    value: dict[str, Any] | None = None
    raw_text: str | None = None
    reasoning: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    attempts: int = 0
    latency_s: float = 0.0
    from_cache: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class RunReport:
    stage: str
    model: str
    endpoint: str
    template_id: str
    template_hash: str
    results: list[LLMResult]
    calls: int = 0
    wall_s: float = 0.0
    smoke_test: bool = False
    outages: list[Outage] = field(default_factory=list)  # endpoints that went down during the run

    @property
    def failures(self) -> list[LLMResult]:
        return [r for r in self.results if not r.ok]

    @property
    def cache_hits(self) -> int:
        return sum(r.from_cache for r in self.results)

    def _tokens(self, attr: str, cached: bool) -> int:
        return sum(getattr(r, attr) for r in self.results if r.from_cache == cached)

    def metadata(self) -> dict[str, Any]:
        by_status: dict[str, int] = {}
        for r in self.results:
            by_status[r.status] = by_status.get(r.status, 0) + 1
        meta: dict[str, Any] = {
            f"{self.stage}/model": self.model,
            f"{self.stage}/endpoint": self.endpoint,
            f"{self.stage}/prompt_hash": self.template_hash,
            f"{self.stage}/requests": len(self.results),
            f"{self.stage}/http_calls": self.calls,
            f"{self.stage}/cache_hits": self.cache_hits,
            f"{self.stage}/ok": by_status.get("ok", 0),
            f"{self.stage}/parse_failed": by_status.get("parse_failed", 0),
            f"{self.stage}/transport_failed": by_status.get("transport_failed", 0),
            f"{self.stage}/prompt_tokens_new": self._tokens("prompt_tokens", cached=False),
            f"{self.stage}/completion_tokens_new": self._tokens("completion_tokens", cached=False),
            f"{self.stage}/prompt_tokens_cached_answers": self._tokens("prompt_tokens", cached=True),
            f"{self.stage}/completion_tokens_cached_answers": self._tokens("completion_tokens", cached=True),
            f"{self.stage}/wall_s": round(self.wall_s, 3),
            f"{self.stage}/endpoint_outages": len(self.outages),
            f"{self.stage}/embedded_model": self.smoke_test,  # answered by the embedded smoke-test model
        }
        if self.outages:
            meta[f"{self.stage}/endpoint_down"] = "; ".join(
                f"{o.url}: {o.down_s:g} s ({o.outcome})" for o in self.outages
            )
        if self.smoke_test:
            meta[f"{self.stage}/note"] = SMOKE_TEST_NOTE
        return meta


SMOKE_TEST_NOTE = (
    "Answers come from the embedded SmolLM2-135M smoke-test model: they exercise the "
    "pipeline and are not clinical judgements."
)


class FreeText(BaseModel):
    """Output model of a free-text answer: no ``response_format`` is sent; the content is the answer.

    An empty content, or one cut at max_tokens (finish_reason length), is not an answer.
    """

    text: str


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def decoding_params(s: StageSettings) -> dict[str, Any]:
    """The decoding parameters that change an answer (and so the cache key)."""
    return {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
        "seed": s.seed,
        "extra_body": s.extra_body,
        "reasoning": s.reasoning,
    }


def stage_identity(endpoint: str, model: str, decoding: dict[str, Any]) -> str:
    """What makes one judge another: endpoint identity, model and decoding, as in the cache key (16 hex)."""
    payload = _canonical({"endpoint": endpoint, "model": model, "decoding": decoding})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def cache_key(
    endpoint: str,
    model: str,
    template: PromptTemplate,
    messages: Sequence[dict[str, str]],
    decoding: dict[str, Any],
    schema: dict[str, Any],
) -> str:
    """SHA-256 of the canonical JSON of endpoint, model, template (id, hash), messages, decoding and schema."""
    return cache_keys(endpoint, model, template, [messages], decoding, schema)[0]


def cache_keys(
    endpoint: str,
    model: str,
    template: PromptTemplate,
    messages: Iterable[Sequence[dict[str, str]]],
    decoding: dict[str, Any],
    schema: dict[str, Any],
) -> list[str]:
    """:func:`cache_key` of each of ``messages``: the canonical JSON of what they share is written once (its keys
    sorted, so "messages" falls between "endpoint" and "model"), and so is the hash of a system message they
    open with (a template's, usually the longest part)."""
    head = f'{{"decoding":{_canonical(decoding)},"endpoint":{_canonical(endpoint)},"messages":['
    tail = f'],"model":{_canonical(model)},"schema":{_canonical(schema)},"template":{_canonical([template.id, template.hash])}}}'
    opened = hashlib.sha256(head.encode())
    after_system: dict[str, Any] = {}  # a system message's content -> the hash after head and that message
    keys = []
    for m in messages:
        first = m[0] if m else None
        if _plain(first) and first["role"] == "system":
            state = after_system.get(first["content"])
            if state is None:
                state = after_system[first["content"]] = opened.copy()
                state.update(_message_json(first).encode())
            h, rest = state.copy(), m[1:]
            h.update("".join("," + _message_json(x) for x in rest).encode())
        else:
            h = opened.copy()
            h.update(",".join(_message_json(x) for x in m).encode())
        h.update(tail.encode())
        keys.append(h.hexdigest())
    return keys


def _plain(message: Any) -> bool:
    """A chat message of a role and a text content, nothing else."""
    return (
        type(message) is dict
        and len(message) == 2
        and type(message.get("role")) is str
        and type(message.get("content")) is str
    )


def _message_json(message: Any) -> str:
    """A message's canonical JSON (:func:`_canonical`); a plain one's written without a sort of its keys."""
    if _plain(message):
        quoted = json.dumps(message["content"], ensure_ascii=False)
        return f'{{"content":{quoted},"role":{json.dumps(message["role"], ensure_ascii=False)}}}'
    return _canonical(message)


def _strip_fences(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def parse_answer(text: str, model: type[BaseModel], finish_reason: str | None = None) -> dict[str, Any]:
    """Validate an answer's JSON against ``model``; raises ValueError with the reason.

    A free text has no schema to break, so the server's ``finish_reason`` tells a whole answer from one cut
    at ``max_tokens`` (a JSON answer cut there fails to parse on its own).
    """
    if model is FreeText:
        if not text.strip():
            raise ValueError("empty answer")
        if finish_reason == "length":
            raise ValueError("answer cut at max_tokens (finish_reason length)")
        return {"text": text}
    try:
        data = json.loads(_strip_fences(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"answer is not JSON: {exc}") from None
    try:
        return model.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        raise ValueError(f"answer violates the schema: {exc.errors(include_url=False)}") from None


def _server_reasoning(message: dict[str, Any]) -> str | None:
    """Reasoning the server returned beside the answer (vLLM/SGLang/llama.cpp field names)."""
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _unpack(resp: Any) -> tuple[dict[str, Any], str, dict[str, Any], str | None]:
    """(message, content, usage, finish_reason) of a chat completion; an odd body becomes the text to parse."""
    try:
        choice = resp["choices"][0]
        message = choice["message"]
        return message, message.get("content") or "", resp.get("usage") or {}, choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        return {}, resp if isinstance(resp, str) else json.dumps(resp)[:2000], {}, None


def error_body(resp: Any) -> str | None:
    """The error a server put in an HTTP 200 body (``{"error": ...}`` without choices), else None."""
    if isinstance(resp, dict) and "error" in resp and not resp.get("choices"):
        err = resp["error"]
        return (err.get("message") if isinstance(err, dict) else None) or json.dumps(err)[:300]
    return None


def is_retryable(status_code: int) -> bool:
    """HTTP statuses worth asking again: timeouts, conflicts, rate limits and server errors."""
    return status_code in (408, 409, 429) or status_code >= 500


def retry_after(exc: openai.APIStatusError) -> float | None:
    """The ``Retry-After`` seconds a 429 answer asked for, if any."""
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


@dataclass
class _Progress:
    total: int  # requests sent so far
    expected: int | None  # requests the run will send in all, when known (an estimate: at least ``total`` counts)
    done: int = 0
    failed: int = 0
    started: float = field(default_factory=time.perf_counter)


@dataclass
class _Batch:
    """One run's requests to send (by cache key) in a stream of runs, and the answers that came back;
    ``answered`` is set once they are all in the answer log."""

    todo: dict[str, LLMRequest]
    report: RunReport
    results: dict[str, LLMResult] = field(default_factory=dict)
    answered: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


@dataclass
class _Queued(Generic[T]):
    """A batch of :meth:`LLMClient.run_ahead`: its requests, their keys, the cached answers and what was sent."""

    tag: T
    requests: Sequence[LLMRequest]
    keys: list[str]
    cached: dict[str, LLMResult]
    report: RunReport
    batch: _Batch | None  # None: nothing to send

    @property
    def asked(self) -> int:
        return 0 if self.batch is None else len(self.batch.todo)


class _Stream:
    """A thread that answers batches submitted to it, one after another, with one :meth:`LLMClient._serve`."""

    def __init__(
        self, client: LLMClient, template: PromptTemplate, output_model: type[BaseModel], expected: int | None
    ):
        self.client, self.template, self.output_model, self.expected = client, template, output_model, expected
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.batches: list[_Batch] = []  # those submitted and not yet answered, at least
        self.left_over: list[Outage] = []  # outages no batch reported (those found as the stream closed)

    def submit(self, todo: dict[str, LLMRequest], report: RunReport) -> _Batch:
        if self.thread is None:
            self._start()
        batch = _Batch(todo, report)
        self.batches = [b for b in self.batches if not b.answered.done()] + [batch]  # not what was handed over
        if self.error is None:
            with contextlib.suppress(RuntimeError):  # the loop closed as it failed: the batch fails below
                self.loop.call_soon_threadsafe(self.queue.put_nowait, batch)
        if self.error is not None:
            self._fail_unanswered()
        return batch

    def close(self, abandon: bool = False) -> None:
        """End the stream (``abandon``: without asking what is still queued) and wait for it: every answer it
        got is in the cache after this. Raises what failed it."""
        if self.thread is None:
            return
        if self.error is None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self.queue.put_nowait, _ABANDON if abandon else None)
        self.thread.join()
        self.thread = None
        if self.error is not None:
            raise self.error

    def _start(self) -> None:
        ready = threading.Event()
        schema = schema_of(self.output_model)
        urls = self.client._resolve_urls()  # here: it may start the embedded server, which this thread's stack owns

        async def serve() -> None:
            self.loop, self.queue = asyncio.get_running_loop(), asyncio.Queue()
            ready.set()
            self.left_over = await self.client._serve(
                self.template, self.output_model, schema, self.queue, urls, self.expected
            )

        def main() -> None:
            try:
                asyncio.run(serve())
            except BaseException as exc:
                self.error = exc
            finally:
                ready.set()
                self._fail_unanswered()

        self.thread = threading.Thread(target=main, name=f"{self.client.stage} requests", daemon=True)
        self.thread.start()
        ready.wait()

    def _fail_unanswered(self) -> None:
        for batch in self.batches:
            if not batch.answered.done():
                batch.answered.set_exception(
                    self.error or RuntimeError(f"{self.client.stage}: the requests ended before a batch was answered")
                )


_ABANDON = object()  # put on a stream's queue: drop what is queued, finish what is in flight, close


class LLMClient:
    """Cached, retrying, bounded-concurrency structured-output client for one stage."""

    def __init__(
        self,
        stage: str,
        settings: StageSettings,
        store: Store,
        endpoint: str,
        model: str,
        resolve_urls: Callable[[], list[str]],
        log: Callable[[str], None] | None = None,
        progress_every_s: float = 10.0,
        flush_every_s: float = 0.5,
        fold_every_s: float = 5.0,
        smoke_test: bool = False,
        retry_parse_failed: bool = False,
    ):
        self.stage = stage
        self.s = settings
        self.store = store
        self.endpoint = endpoint
        self.model = model
        self._resolve_urls = resolve_urls
        self._log = log or (lambda _msg: None)
        self.progress_every_s = progress_every_s
        self.flush_every_s = flush_every_s  # answers reach the (fsync'd) answer log at least this often
        self.fold_every_s = fold_every_s  # and are folded into the DuckDB cache at most this often
        self.smoke_test = smoke_test
        # re-ask answers cached as parse_failed: the argument, the stage setting, or the command line's option
        self.retry_parse_failed = (
            retry_parse_failed or settings.retry_parse_failed or os.environ.get(RETRY_PARSE_FAILED_ENV) == "1"
        )
        self._rng = random.Random()
        self._counter: TokenCounter | None = None
        self._looked_up_s = 0.0  # time of look_up not yet in a report's wall_s: the next run_ahead counts it
        self._sent_requests = self._sent_tokens = 0  # new requests this client has sent, against the budget
        with store.connect(write=True) as con:
            ensure_cache_tables(con)

    # -- public -------------------------------------------------------------
    @property
    def identity(self) -> str:
        """This stage's judge identity (endpoint, model, decoding): answers of equal identities are interchangeable."""
        return stage_identity(self.endpoint, self.model, decoding_params(self.s))

    def run(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        requests: Sequence[LLMRequest],
    ) -> RunReport:
        return asyncio.run(self.arun(template, output_model, requests))

    async def arun(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        requests: Sequence[LLMRequest],
    ) -> RunReport:
        """Answer ``requests``, from the cache where it holds them."""
        started = time.perf_counter()
        keys, cached, todo, report = self._to_send(template, output_model, requests)
        fresh: dict[str, LLMResult] = {}
        if todo:
            fresh = await self._ask_all(template, output_model, schema_of(output_model), todo, report)
        report.results = _answers(keys, requests, fresh, cached)
        report.wall_s = time.perf_counter() - started
        return report

    def _to_send(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        requests: Sequence[LLMRequest],
        looked_up: tuple[list[str], dict[str, LLMResult]] | None = None,
    ) -> tuple[list[str], dict[str, LLMResult], dict[str, LLMRequest], RunReport]:
        """:meth:`pending` of a run, and its report (no results yet); the requests to send are counted against
        the stage's budget (raising past it) and said in the log."""
        keys, cached, todo = self.pending(template, output_model, requests, looked_up)
        report = RunReport(
            self.stage, self.model, self.endpoint, template.id, template.hash, [], smoke_test=self.smoke_test
        )
        if todo:
            self._sent_tokens += self._within_budget(todo.values())
            self._sent_requests += len(todo)
            self._log(f"{self.stage}: {len(requests) - len(todo)} cached, {len(todo)} to ask {self.model}")
        return keys, cached, todo, report

    def run_ahead(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        batches: Iterable[tuple[T, Sequence[LLMRequest], tuple[list[str], dict[str, LLMResult]] | None]],
        expected: int | None = None,
    ) -> Iterator[tuple[T, RunReport]]:
        """:meth:`run` of each batch (tag, requests, looked_up), in order, giving (tag, report) once the batch's
        answers are all in the answer log (the last batch's: in the cache). The batches behind it are asked
        meanwhile, so the endpoints stay busy while the caller stores a batch's results: as many requests wait
        behind the batch awaited as it has (at least one). ``batches`` is read in this thread as they are needed;
        ``looked_up``: the batch's keys and the cached answers :meth:`look_up` read (else they are read now). A
        report's ``wall_s`` is the client's time since the report before it (the first's since the call, with a
        :meth:`look_up` made before it), so they sum to the client's time for all of them. ``expected``: how many
        requests the batches will send in all, if the caller knows it (an estimate is fine: the progress lines
        count at least those sent), so that the lines say how long is left; None: they count what was sent so far
        and estimate nothing."""
        stream = _Stream(self, template, output_model, expected)
        window: deque[_Queued[T]] = deque()
        source = iter(batches)
        last = time.perf_counter() - self._looked_up_s
        exhausted = closed = False
        try:
            while True:
                while not exhausted and (
                    not window or sum(q.asked for q in list(window)[1:]) < max(window[0].asked, 1)
                ):
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                        break
                    tag, requests, looked_up = item
                    keys, cached, todo, report = self._to_send(template, output_model, requests, looked_up)
                    batch = stream.submit(todo, report) if todo else None
                    window.append(_Queued(tag, requests, keys, cached, report, batch))
                if not window:
                    break
                q = window.popleft()
                fresh: dict[str, LLMResult] = {}
                if q.batch is not None:
                    q.batch.answered.result()  # raises what failed the stream
                    fresh = q.batch.results
                if exhausted and not window:
                    closed = True
                    stream.close()  # the last batch's answers in the cache, as :meth:`run`'s
                    q.report.outages += stream.left_over
                q.report.results = _answers(q.keys, q.requests, fresh, q.cached)
                now = time.perf_counter()
                q.report.wall_s, last = now - last, now
                self._looked_up_s = 0.0  # a look_up made meanwhile is inside this time
                yield q.tag, q.report
        finally:
            if not closed:
                stream.close(abandon=True)

    def pending(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        requests: Sequence[LLMRequest],
        looked_up: tuple[list[str], dict[str, LLMResult]] | None = None,
    ) -> tuple[list[str], dict[str, LLMResult], dict[str, LLMRequest]]:
        """What a run of ``requests`` would do, sending nothing: the cache key of each request, the cached
        answers (by key) and the requests to send (one per key not in the cache). ``looked_up``: the keys and
        cached answers :meth:`look_up` read before (else they are read now)."""
        if looked_up is None:
            keys = self._keys(template, output_model, requests)
            cached = self._lookup(set(keys))
        else:
            keys, cached = looked_up
        todo: dict[str, LLMRequest] = {}
        for key, req in zip(keys, requests, strict=True):
            if key not in cached and key not in todo:
                todo[key] = req
        return keys, cached, todo

    @staticmethod
    def to_send(looked_up: tuple[list[list[str]], dict[str, LLMResult]]) -> int:
        """How many requests the batches :meth:`look_up` read would send (one per key of a batch not in the cache,
        as :meth:`pending` picks them): what to tell :meth:`run_ahead` to expect."""
        keys, cached = looked_up
        return sum(len({k for k in batch if k not in cached}) for batch in keys)

    def look_up(
        self, template: PromptTemplate, output_model: type[BaseModel], batches: Iterable[Sequence[LLMRequest]]
    ) -> tuple[list[list[str]], dict[str, LLMResult]]:
        """The cache keys of each batch's requests, and the cached answers of all of them in one read of the
        cache: a read scans the whole cache, so its cost grows with the cache, not with the requests, and a step
        that asks in many runs reads it once. Give :meth:`run_ahead` a batch's keys with the answers; the time
        taken here is counted in its next report's ``wall_s``. An answer cached after this read (by another
        process) is asked again and its cache row replaced."""
        started = time.perf_counter()
        keys = [self._keys(template, output_model, batch) for batch in batches]
        cached = self._lookup({k for batch in keys for k in batch})
        self._looked_up_s += time.perf_counter() - started  # the client's time: in the next report's wall_s
        return keys, cached

    def _keys(
        self, template: PromptTemplate, output_model: type[BaseModel], requests: Sequence[LLMRequest]
    ) -> list[str]:
        return cache_keys(
            self.endpoint,
            self.model,
            template,
            (r.messages for r in requests),
            decoding_params(self.s),
            schema_of(output_model),
        )

    def check_budget(
        self,
        runs: Iterable[tuple[PromptTemplate, type[BaseModel], Sequence[LLMRequest]]],
        looked_up: tuple[list[list[str]], dict[str, LLMResult]] | None = None,
    ) -> None:
        """Raise :class:`BudgetExceeded` if sending the uncached requests of every run (template, output model,
        requests) would exceed the stage's budget: a step that asks in several runs calls it with all of them
        before the first. ``looked_up``: what :meth:`look_up` read for these runs, in order (else each run's
        keys and cached answers are read now). Without a budget, the runs are not read."""
        if not self._budgeted:
            return
        new_requests = tokens = 0
        for i, (template, output_model, requests) in enumerate(runs):
            known = None if looked_up is None else (looked_up[0][i], looked_up[1])
            todo = list(self.pending(template, output_model, requests, known)[2].values())
            new_requests += len(todo)
            tokens += self._tokens_of(todo)
        self._breach(new_requests, tokens)

    @property
    def _budgeted(self) -> bool:
        return self.s.max_new_requests is not None or self.s.max_new_prompt_tokens is not None

    @property
    def token_counter(self) -> TokenCounter:
        """How this stage's prompt tokens are counted: its tokenizer where a local copy exists, else an estimate."""
        if self._counter is None:
            self._counter = counter_for(self.s.tokenizer or self.model)
        return self._counter

    def _tokens_of(self, requests: Iterable[LLMRequest]) -> int:
        if self.s.max_new_prompt_tokens is None:
            return 0  # counted only where a budget needs them
        return sum(self.token_counter.count(r.messages) for r in requests)

    def _within_budget(self, todo: Iterable[LLMRequest]) -> int:
        """Raise :class:`BudgetExceeded` if this client's new requests with ``todo`` exceed the stage's budget;
        returns the prompt tokens of ``todo`` (0 when no token budget is set: nothing is counted)."""
        if not self._budgeted:
            return 0
        todo = list(todo)
        tokens = self._tokens_of(todo)
        self._breach(len(todo), tokens)
        return tokens

    def _breach(self, new_requests: int, new_tokens: int) -> None:
        breach = budget_breach(
            self.stage,
            self.s,
            self._sent_requests + new_requests,
            self._sent_tokens + new_tokens,
            self.token_counter.method if self.s.max_new_prompt_tokens is not None else "",
            self._sent_requests,
        )
        if breach:
            raise BudgetExceeded(breach)

    # -- cache --------------------------------------------------------------
    def _lookup(self, keys: set[str]) -> dict[str, LLMResult]:
        for line in recover(self.store):  # what a killed process got is in the cache before anything is looked up
            self._log(f"{self.stage}: {line}")
        if not keys:
            return {}
        wanted = pl.DataFrame({"cache_key": sorted(keys)}).to_arrow()
        statuses = ["ok"] if self.retry_parse_failed else ["ok", "parse_failed"]
        with self.store.connect() as con:
            con.register("_wanted", wanted)
            rows = con.execute(
                f"""SELECT c.cache_key, status, parsed_json, raw_text, reasoning, error,
                           prompt_tokens, completion_tokens, cached_tokens, attempts, latency_s
                    FROM {CACHE_TABLE} c JOIN _wanted w USING (cache_key)
                    WHERE status IN (SELECT unnest(?))""",
                [statuses],
            ).fetchall()
        out = {}
        for key, status, parsed, raw, reasoning, error, pt, ct, cached_t, attempts, latency in rows:
            out[key] = LLMResult(
                item_id="",
                cache_key=key,
                status=status,
                value=json.loads(parsed) if parsed is not None else None,
                raw_text=raw,
                reasoning=reasoning,
                error=error,
                prompt_tokens=pt or 0,
                completion_tokens=ct or 0,
                cached_tokens=cached_t or 0,
                attempts=attempts,
                latency_s=latency or 0.0,
                from_cache=True,
            )
        return out

    def _row(self, res: LLMResult, template: PromptTemplate, schema_hash: str) -> dict[str, Any]:
        """The cache row of an answer, as the answer log and ``llm_responses`` hold it."""
        return {
            "cache_key": res.cache_key,
            "stage": self.stage,
            "endpoint": self.endpoint,
            "model": self.model,
            "template_id": template.id,
            "template_hash": template.hash,
            "schema_hash": schema_hash,
            "status": res.status,
            "raw_text": res.raw_text,
            "reasoning": res.reasoning,
            "parsed_json": None if res.value is None else _canonical(res.value),
            "error": res.error,
            "prompt_tokens": res.prompt_tokens,
            "completion_tokens": res.completion_tokens,
            "cached_tokens": res.cached_tokens,
            "attempts": res.attempts,
            "latency_s": res.latency_s,
            "created_at": now_utc(),
        }

    def _fold(self, file: LogFile | None, failures: list[tuple]) -> float:
        """Write a log file's rows and the transport failures to the cache, then delete the file; seconds taken."""
        started = time.perf_counter()
        try:
            fold(self.store, file.rows if file else [], failures)
        except BaseException:
            if file:
                file.release()
            raise
        if file:
            file.discard()
        return time.perf_counter() - started

    # -- HTTP ---------------------------------------------------------------
    async def _ask_all(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        schema: dict[str, Any],
        todo: dict[str, LLMRequest],
        report: RunReport,
    ) -> dict[str, LLMResult]:
        batches: asyncio.Queue = asyncio.Queue()
        batch = _Batch(todo, report)
        for item in (batch, None):
            batches.put_nowait(item)
        report.outages += await self._serve(template, output_model, schema, batches, self._resolve_urls(), len(todo))
        return batch.results

    async def _serve(
        self,
        template: PromptTemplate,
        output_model: type[BaseModel],
        schema: dict[str, Any],
        batches: asyncio.Queue,
        urls: list[str],
        expected: int | None,
    ) -> list[Outage]:
        """Answer the ``todo`` of each :class:`_Batch` put on ``batches``, in order, until a None (or
        ``_ABANDON``: what is queued is dropped), with one pool of endpoints (``urls``) and workers and one
        answer log for all of them: a batch's ``answered`` is set once its answers are all in the log, while the
        workers go on with the next. Every answer is in the cache before this returns; returns the outages no
        batch reported. ``expected``: the requests all batches hold, for the progress lines (None: not known)."""
        api_key = os.environ.get(self.s.api_key_env) or NO_KEY
        pools = max(1, -(-self.s.concurrency // POOL_SIZE))
        endpoints = EndpointPool.open(self.stage, urls, self.s, api_key, pools, self._log, self._rng)
        schema_hash = hashlib.sha256(_canonical(schema).encode()).hexdigest()[:16]
        response_format = (
            None
            if output_model is FreeText
            else {
                "type": "json_schema",
                "json_schema": {"name": output_model.__name__, "schema": schema, "strict": True},
            }
        )
        pending: list[dict[str, Any]] = []  # cache rows of answers not yet in the log
        failures: list[tuple] = []  # transport failures, written to the cache with the next fold
        progress = _Progress(total=0, expected=expected)
        reported = 0  # endpoints.outages given to a batch's report so far
        work: asyncio.Queue = asyncio.Queue()  # (batch, key, request); None stops a worker
        n_workers = 2 * self.s.concurrency * len(urls)  # a bounded pool, not a task per request: memory stays flat

        log = AnswerLog(log_dir(self.store))
        appending = asyncio.Lock()
        # folds run in one thread of lowered priority (DuckDB's workers inherit it): spare CPU, not the requests'
        writer = ThreadPoolExecutor(max_workers=1, initializer=background_thread)
        loop = asyncio.get_running_loop()
        finished = asyncio.Event()

        def take(rows: list) -> list:
            batch = rows[:]
            del rows[: len(batch)]
            return batch

        async def append() -> None:
            async with appending:
                if pending:
                    await asyncio.to_thread(log.append, take(pending))

        async def one(batch: _Batch, key: str, req: LLMRequest) -> None:
            nonlocal reported
            res = await self._ask(endpoints, key, req, output_model, response_format, batch.report)
            batch.results[key] = res
            if res.status == "transport_failed":
                failures.append((key, self.stage, req.item_id, res.error or "", res.attempts, now_utc()))
            else:
                pending.append(self._row(res, template, schema_hash))
            progress.done += 1
            progress.failed += not res.ok
            if len(batch.results) == len(batch.todo):
                await append()  # in the log before the caller stores what it got
                batch.report.outages += endpoints.outages[reported:]
                reported = len(endpoints.outages)
                batch.answered.set_result(None)

        async def worker() -> None:
            while (item := await work.get()) is not None:
                await one(*item)

        async def feeder() -> None:
            while (batch := await batches.get()) not in (None, _ABANDON):
                progress.total += len(batch.todo)
                for key, req in batch.todo.items():
                    work.put_nowait((batch, key, req))
            if batch is _ABANDON:
                while not work.empty():
                    work.get_nowait()
            for _ in range(n_workers):
                work.put_nowait(None)

        async def keeper() -> None:
            # every flush_every_s the new answers are appended to the log (durable; the append's cost does not
            # grow with the cache); a fold into DuckDB (whose cost does) runs beside it, spaced so that folds take
            # about WRITE_SHARE of the run and at least fold_every_s apart. The last fold is awaited at the end.
            folding: asyncio.Future | None = None
            next_fold = time.perf_counter() + self.fold_every_s
            next_flush = time.perf_counter() + self.flush_every_s
            while not finished.is_set():
                with contextlib.suppress(TimeoutError):  # a steady cadence: the append's own time is not added
                    await asyncio.wait_for(finished.wait(), max(0.0, next_flush - time.perf_counter()))
                next_flush = time.perf_counter() + self.flush_every_s
                await append()
                if folding is not None and folding.done():
                    folding, took = None, folding.result()
                    next_fold = max(next_fold, time.perf_counter() + took * (1 / WRITE_SHARE - 1))
                if folding is None and time.perf_counter() >= next_fold:
                    async with appending:  # the file handed over holds every row appended to it
                        file = log.rotate()
                    folding = loop.run_in_executor(writer, self._fold, file, take(failures))
                    next_fold = time.perf_counter() + self.fold_every_s
            if folding is not None:
                await folding
            await append()
            await loop.run_in_executor(writer, self._fold, log.rotate(), take(failures))

        async def reporter() -> None:
            while True:
                await asyncio.sleep(self.progress_every_s)
                self._log(self._progress_line(progress))

        keeping, reporting = asyncio.create_task(keeper()), asyncio.create_task(reporter())
        try:
            await asyncio.gather(feeder(), *(worker() for _ in range(n_workers)))
        finally:
            reporting.cancel()
            await asyncio.gather(reporting, return_exceptions=True)
            finished.set()
            try:
                await keeping  # every answer is in the cache before the run returns
            finally:
                writer.shutdown()
                await endpoints.close()
        progress.expected = progress.total  # the run is over: what it sent is all it sends
        self._log(self._progress_line(progress))
        return endpoints.outages[reported:]

    def _progress_line(self, p: _Progress) -> str:
        elapsed = max(time.perf_counter() - p.started, 1e-9)
        rate = p.done / elapsed
        if p.expected is None:  # more batches may come: no total, no estimate
            return f"{self.stage}: {p.done}/{p.total} answered ({p.failed} failed) of those asked so far, {rate:.2f}/s"
        total = max(p.total, p.expected)
        eta = (total - p.done) / rate if rate > 0 else float("inf")
        eta_txt = "unknown" if eta == float("inf") else f"{eta:.0f}s"
        return f"{self.stage}: {p.done}/{total} answered ({p.failed} failed), {rate:.2f}/s, est. {eta_txt} left"

    def _backoff(self, failures: int, wait_at_least: float | None) -> float:
        delay = backoff_delay(failures, self.s.backoff_base_s, self.s.backoff_max_s, self._rng)
        return max(delay, wait_at_least) if wait_at_least is not None else delay

    async def _ask(
        self,
        endpoints: EndpointPool,
        key: str,
        req: LLMRequest,
        output_model: type[BaseModel],
        response_format: dict[str, Any] | None,
        report: RunReport,
    ) -> LLMResult:
        import openai

        transport_failures = parse_failures = attempts = refused_while_up = 0
        body: dict[str, Any] = {
            **self.s.extra_body,
            "model": self.model,
            "messages": req.messages,
            "temperature": self.s.temperature,
            "max_tokens": self.s.max_tokens,
            **({"response_format": response_format} if response_format else {}),
        }
        if self.s.top_p is not None:
            body["top_p"] = self.s.top_p
        if self.s.seed is not None:
            body["seed"] = self.s.seed
        # serialised once for every attempt: given bytes, the openai client neither deep-copies nor re-encodes it
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        latency = 0.0
        while True:
            wait_at_least = None
            error: str | None = None
            retryable = unreachable = False
            try:
                ep = await endpoints.acquire()
            except EndpointsDown as exc:
                return LLMResult("", key, "transport_failed", error=str(exc), attempts=attempts, latency_s=latency)
            attempts += 1
            report.calls += 1
            t0 = time.perf_counter()
            try:
                # the body is plain JSON already and the answer is read as plain JSON: the typed
                # create() would walk both through pydantic models, which costs more than the call
                resp = await ep.pick().post("/chat/completions", content=payload, cast_to=object)
                endpoints.answered(ep)
            except openai.APIStatusError as exc:
                endpoints.answered(ep)
                code = exc.status_code
                retryable = is_retryable(code)
                wait_at_least = retry_after(exc) if code == 429 else None
                error = f"HTTP {code} from {ep.url}: {str(exc)[:300]}"
            except openai.APITimeoutError as exc:
                retryable = True
                error = f"{type(exc).__name__} from {ep.url}: {exc}"
            except openai.APIConnectionError as exc:
                # the endpoint's fault, not the request's: counted against the endpoint, which is marked
                # down and probed after consecutive failures; the pair fails only when every endpoint is given up
                unreachable = True
                endpoints.connection_failed(ep)
                failures = ep.consecutive_failures
                error = f"{type(exc).__name__} from {ep.url}: {exc}"
            finally:
                endpoints.release(ep)
            latency = time.perf_counter() - t0
            if unreachable:
                # refused while the endpoint stays up (others get through): this request's own failure
                refused_while_up += ep.up
                if refused_while_up > self.s.max_retries + self.s.down_after_failures:
                    return LLMResult("", key, "transport_failed", error=error, attempts=attempts, latency_s=latency)
                await asyncio.sleep(self._backoff(max(1, min(failures, 3)), None))
                continue
            if error is None:
                error = error_body(resp)
                if error is not None:  # an HTTP 200 carrying an error object: the server failed, ask again
                    retryable, error = True, f"HTTP 200 with an error body from {ep.url}: {error}"
            if error is not None:
                transport_failures += 1
                if not retryable or transport_failures > self.s.max_retries:
                    return LLMResult("", key, "transport_failed", error=error, attempts=attempts, latency_s=latency)
                await asyncio.sleep(self._backoff(transport_failures, wait_at_least))
                continue
            message, text, usage, finish_reason = _unpack(resp)
            tokens = dict(
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
                cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
            )
            try:
                value = parse_answer(text, output_model, finish_reason)
            except ValueError as exc:
                parse_failures += 1
                if parse_failures > self.s.parse_retries:
                    return LLMResult(
                        "",
                        key,
                        "parse_failed",
                        raw_text=text,
                        reasoning=_server_reasoning(message),
                        error=str(exc)[:2000],
                        attempts=attempts,
                        latency_s=latency,
                        **tokens,
                    )
                continue
            reasoning = _server_reasoning(message)
            if reasoning is None and isinstance(value.get("reasoning"), str):
                reasoning = value["reasoning"]
            return LLMResult(
                "",
                key,
                "ok",
                value=value,
                raw_text=text,
                reasoning=reasoning,
                attempts=attempts,
                latency_s=latency,
                **tokens,
            )


def _answers(
    keys: list[str], requests: Sequence[LLMRequest], fresh: dict[str, LLMResult], cached: dict[str, LLMResult]
) -> list[LLMResult]:
    """Each request's answer, in order: asked in this run (``fresh``) or else from the cache."""
    return [_for_item(fresh[k] if k in fresh else cached[k], r.item_id) for k, r in zip(keys, requests)]


def _for_item(res: LLMResult, item_id: str) -> LLMResult:
    out = LLMResult(**{**res.__dict__})
    out.item_id = item_id
    return out
