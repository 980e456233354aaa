"""A small OpenAI-compatible HTTP server for tests and benchmarks, with fault injection.

Serves ``POST /v1/chat/completions`` (answers a schema-valid JSON instance of the
request's ``response_format`` schema, derived deterministically from the
messages; without ``response_format``, a free text derived from the messages),
``POST /v1/embeddings`` (deterministic unit vectors), ``POST /v1/rerank``
(vLLM/Infinity ``documents`` requests answered ``{"results": [{"index", "relevance_score"}]}``,
TEI ``texts`` requests answered ``[{"index", "score"}]``; scores are a hash of query and
document), ``GET /v1/models`` and ``GET /stats`` / ``POST /reset`` (call counts; per requested model,
``prompt_chars_over_4:<model>``: the characters of each distinct request's messages / 4, rounded up, summed).

Faults are requested inside the last user message:

- ``[[fault:500x2]]``: the first 2 attempts of this request answer HTTP 500;
- ``[[fault:429x1:retry_after=1]]``: 429 with a ``Retry-After`` header;
- ``[[fault:slow=5x1]]``: sleep 5 s before answering (past a client timeout);
- ``[[fault:malformedx1]]``: content that is not JSON, cut off (``finish_reason``
  ``length``, as an answer stopped at ``max_tokens``); ``[[fault:schemax1]]``: JSON
  violating the schema; ``[[fault:emptyx1]]``: empty content; ``[[fault:errorbodyx1]]``:
  HTTP 200 whose body is an error object (omit ``xN`` to fault on every attempt);
- ``[[answer:{...}]]``: answer exactly this JSON;
- in a rerank query: the same faults (any status: ``[[fault:400]]``); ``malformed`` answers non-JSON, ``schema`` a results
  list missing a document, ``nan`` a non-numeric score;
- ``[[reasoning]]``: also return ``reasoning_content`` beside the answer (vLLM style).

``--fault-rate R`` injects one of these at random (seeded by the request) on a
share R of first attempts. ``--delay`` adds a fixed answer time. ``--fault KIND`` injects KIND
(a name above) into every chat answer; ``--served-model NAME`` makes the server serve NAME only
(``/v1/models`` lists it and every answer says it, whatever model was asked).

Run: ``python -m mama_pipeline_tests.support.fake_llm_server --port 8765 --delay 0.2``;
in tests use :func:`running_server` (its handle can ``stop()`` and ``start()`` the
server again on the same port, to stage an outage).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

from mama_pipeline_tests.support.processes import free_port

FAULT_RE = re.compile(r"\[\[fault:([a-z]+|\d{3})(?:=([\d.]+))?(?:x(\d+))?(?::retry_after=([\d.]+))?\]\]")
ANSWER_RE = re.compile(r"\[\[answer:(\{.*?\})\]\]", re.S)


def instance_of(schema: dict[str, Any], seed: bytes, root: dict[str, Any] | None = None) -> Any:
    """A deterministic instance of a JSON schema (the subset pydantic emits)."""
    root = root or schema
    rng = random.Random(seed)
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return instance_of(root["$defs"][name], seed, root)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"] or schema["anyOf"]
        return instance_of(options[rng.randrange(len(options))], seed + b"a", root)
    if "enum" in schema:
        return schema["enum"][rng.randrange(len(schema["enum"]))]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: instance_of(v, seed + k.encode(), root) for k, v in props.items()}
    if kind == "array":
        n = max(schema.get("minItems", 1), 1)
        return [instance_of(schema.get("items", {"type": "string"}), seed + bytes([i]), root) for i in range(n)]
    if kind == "integer":
        lo = int(schema.get("minimum", 0))
        hi = int(schema.get("maximum", lo + 2))
        return rng.randint(lo, hi)
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    max_len = schema.get("maxLength", 60)
    return f"fake answer {seed.hex()[:8]}"[:max_len]


def violation_of(schema: dict[str, Any]) -> dict[str, Any]:
    """JSON that parses but breaks the schema (wrong types everywhere)."""
    return {k: {"unexpected": True} for k in schema.get("properties", {"x": {}})}


class FakeLLM:
    def __init__(self, delay: float, fault_rate: float, fault: str | None = None, served_model: str | None = None):
        self.delay = delay
        self.fault_rate = fault_rate
        self.fault = fault
        self.served_model = served_model
        self.attempts: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()
        self.tallied: set[tuple[str, str]] = set()  # (model, messages digest) whose prompt tokens are counted

    async def __call__(self, scope, receive, send):  # ASGI
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        path = scope["path"]
        for name, value in scope.get("headers", []):
            if name == b"authorization":  # record only a digest of the key the client sent
                self.stats["bearer:" + hashlib.sha256(value.split(b" ")[-1]).hexdigest()[:12]] = 1
        if path.endswith("/chat/completions"):
            status, headers, payload = await self.chat(json.loads(body))
        elif path.endswith("/rerank"):
            status, headers, payload = await self.rerank(json.loads(body), hashlib.sha256(body).digest())
        elif path.endswith("/embeddings"):
            status, headers, payload = 200, {}, self.embeddings(json.loads(body))
        elif path.endswith("/models"):
            served = self.served_model or "fake"
            status, headers, payload = 200, {}, {"object": "list", "data": [{"id": served, "object": "model"}]}
        elif path == "/stats":
            status, headers, payload = 200, {}, dict(self.stats)
        elif path == "/reset":
            self.stats.clear()
            self.attempts.clear()
            self.tallied.clear()
            status, headers, payload = 200, {}, {}
        else:
            status, headers, payload = 404, {}, {"error": "not found"}
        data = json.dumps(payload).encode()
        hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        hdrs += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": data})

    def embeddings(self, req: dict[str, Any]) -> dict[str, Any]:
        self.stats["embeddings_calls"] += 1
        inputs = req["input"] if isinstance(req["input"], list) else [req["input"]]
        self.stats["embedded_texts"] += len(inputs)
        dim = int(req.get("dimensions") or 16)
        data = []
        for i, text in enumerate(inputs):
            rng = random.Random(hashlib.sha256(str(text).encode()).digest())
            vec = [rng.gauss(0, 1) for _ in range(dim)]
            norm = sum(v * v for v in vec) ** 0.5
            data.append({"object": "embedding", "index": i, "embedding": [v / norm for v in vec]})
        return {
            "object": "list",
            "data": data,
            "model": req.get("model", "fake"),
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
        }

    async def rerank(self, req: dict[str, Any], digest: bytes) -> tuple[int, dict[str, str], Any]:
        self.stats["rerank_calls"] += 1
        query = str(req.get("query", ""))
        tei = "texts" in req
        docs = [str(d) for d in req.get("texts" if tei else "documents", [])]
        self.attempts[digest.hex()] += 1
        fault = self._fault(query, self.attempts[digest.hex()], digest)
        if self.delay:
            await asyncio.sleep(self.delay)
        scores = [int.from_bytes(hashlib.sha256(f"{query}\0{d}".encode()).digest()[:4], "big") / 2**32 for d in docs]
        results: list[dict[str, Any]] = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        if fault:
            kind, value, retry_after = fault
            self.stats[f"fault:{kind}"] += 1
            if kind == "429":
                return 429, {"retry-after": str(retry_after or 1)}, {"error": {"message": "injected rate limit"}}
            if kind.isdigit():  # any other status: [[fault:500]], [[fault:400]]
                return int(kind), {}, {"error": {"message": f"injected HTTP {kind}"}}
            if kind == "slow":
                await asyncio.sleep(float(value or 5))
            if kind == "malformed":
                return 200, {}, "not a rerank answer"
            if kind == "schema":
                results = results[1:]
            if kind == "nan":
                results[0]["relevance_score"] = "NaN"
        self.stats["reranked_documents"] += len(docs)
        results.sort(key=lambda r: -r["relevance_score"] if isinstance(r["relevance_score"], float) else 0)
        if tei:
            return 200, {}, [{"index": r["index"], "score": r["relevance_score"]} for r in results]
        return (
            200,
            {},
            {
                "id": "rerank-fake",
                "model": req.get("model", "fake"),
                "results": results,
                "usage": {"total_tokens": len(docs)},
            },
        )

    async def chat(self, req: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        self.stats["chat_calls"] += 1
        messages = req.get("messages", [])
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
        key = digest.hex()
        self.attempts[key] += 1
        attempt = self.attempts[key]
        self.stats[f"distinct:{key}"] = 1
        model = str(req.get("model"))
        if (model, key) not in self.tallied:  # each distinct request once per model: characters / 4, rounded up
            self.tallied.add((model, key))
            chars = sum(len(str(m.get("content") or "")) for m in messages)
            self.stats[f"prompt_chars_over_4:{model}"] += -(-chars // 4)
        last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        fault = (self.fault, None, None) if self.fault else self._fault(last_user, attempt, digest)
        if self.delay:
            await asyncio.sleep(self.delay)
        schema = (req.get("response_format") or {}).get("json_schema", {}).get("schema", {"type": "object"})
        content: str
        if fault:
            kind, value, retry_after = fault
            self.stats[f"fault:{kind}"] += 1
            if kind == "500":
                return 500, {}, {"error": {"message": "injected server error"}}
            if kind == "429":
                return 429, {"retry-after": str(retry_after or 1)}, {"error": {"message": "injected rate limit"}}
            if kind == "slow":
                await asyncio.sleep(float(value or 5))
            if kind == "errorbody":
                return 200, {}, {"error": {"message": "injected error in a 200 body", "code": 500}}
            if kind == "malformed":
                content = '{"reasoning": "cut off'
                return 200, {}, self._completion(req, content, messages, finish_reason="length")
            if kind == "empty":
                return 200, {}, self._completion(req, "", messages)
            if kind == "schema":
                return 200, {}, self._completion(req, json.dumps(violation_of(schema)), messages)
        answer = ANSWER_RE.search(last_user)
        if answer:
            content = answer.group(1)
        elif req.get("response_format"):
            content = json.dumps(instance_of(schema, digest))
        else:  # a free-text request: a text that depends on the messages
            content = f"fake free-text answer {digest.hex()[:12]}"
        self.stats["answered"] += 1
        out = self._completion(req, content, messages)
        if "[[reasoning]]" in last_user:
            out["choices"][0]["message"]["reasoning_content"] = "server-side reasoning before the verdict"
        return 200, {}, out

    def _fault(self, text: str, attempt: int, digest: bytes) -> tuple[str, str | None, float | None] | None:
        m = FAULT_RE.search(text)
        if m:
            kind, value, times, retry_after = m.groups()
            if times is None or attempt <= int(times):
                return kind, value, float(retry_after) if retry_after else None
            return None
        if self.fault_rate and attempt == 1:
            rng = random.Random(digest)
            if rng.random() < self.fault_rate:
                return rng.choice(["500", "429", "malformed", "schema"]), None, 0.05
        return None

    def _completion(
        self, req: dict[str, Any], content: str, messages: list[dict[str, Any]], finish_reason: str = "stop"
    ) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": self.served_model or req.get("model", "fake"),
            "choices": [
                {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content.split()),
                "total_tokens": prompt_tokens + len(content.split()),
            },
        }


class ServerHandle:
    def __init__(
        self,
        port: int,
        delay: float = 0.0,
        fault_rate: float = 0.0,
        fault: str | None = None,
        served_model: str | None = None,
    ):
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        self._args = ["--port", str(port), "--delay", str(delay), "--fault-rate", str(fault_rate)]
        self._args += ["--fault", fault] if fault else []
        self._args += ["--served-model", served_model] if served_model else []
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        """The server process's id (benchmarks read its CPU time)."""
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Start the server process and wait until it answers."""
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "mama_pipeline_tests.support.fake_llm_server", *self._args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=1).read()
                return
            except OSError:
                if self._proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError("fake LLM server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server process (its port refuses connections until ``start``)."""
        if self._proc is None:
            return
        self._proc.send_signal(signal.SIGTERM)
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats") as r:
            raw = json.load(r)
        out = {k: v for k, v in raw.items() if not k.startswith(("distinct:", "bearer:"))}
        out["bearer_digests"] = sorted(k.split(":", 1)[1] for k in raw if k.startswith("bearer:"))
        out["distinct_requests"] = sum(1 for k in raw if k.startswith("distinct:"))
        out.setdefault("chat_calls", 0)
        return out

    def reset(self) -> None:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{self.port}/reset", method="POST")).read()


@contextlib.contextmanager
def running_server(
    delay: float = 0.0, fault_rate: float = 0.0, fault: str | None = None, served_model: str | None = None
) -> Iterator[ServerHandle]:
    """Start the server in a subprocess on a free loopback port; stop it on exit."""
    handle = ServerHandle(free_port(), delay, fault_rate, fault, served_model)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def main() -> None:
    import uvicorn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--fault", default=None, help="a fault kind injected into every chat answer")
    ap.add_argument("--served-model", default=None, help="the one model served (listed, and named in answers)")
    args = ap.parse_args()
    uvicorn.run(
        FakeLLM(args.delay, args.fault_rate, args.fault, args.served_model),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        backlog=4096,
        limit_concurrency=None,
        timeout_keep_alive=30,
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
