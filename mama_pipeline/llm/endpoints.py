"""The base URLs of one stage's run, with outage handling.

Requests go to the least-loaded endpoint that is up, at most ``concurrency`` at a
time per endpoint. ``down_after_failures`` consecutive connection failures mark an
endpoint down: nothing more is sent to it, and it is probed (``GET /models``) with
exponential backoff until it answers (it is up again: traffic resumes) or until it
has been down ``endpoint_patience_s`` (it is given up for this run). Requests wait
while every endpoint is down and some are still being probed; they fail only when
every endpoint has been given up. Every outage is logged with its duration.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mama_pipeline.llm.http_transport import lean_http_client
from mama_pipeline.llm.settings import StageSettings

if TYPE_CHECKING:
    import openai


class EndpointsDown(Exception):
    """Every endpoint of the stage is down and has been given up; the message says which and for how long."""


def backoff_delay(failures: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Exponential backoff with jitter (between half and all of base * 2^(failures-1), capped)."""
    return min(max_s, base_s * 2 ** (failures - 1)) * (0.5 + rng.random() / 2)


@dataclass
class Endpoint:
    """One base URL: one client on the lean transport, or several small httpx pools (httpx scans a pool per request)."""

    url: str
    clients: list[openai.AsyncOpenAI]
    slots: asyncio.Semaphore
    load: int = 0  # requests chosen for this endpoint (waiting for a slot or in flight)
    consecutive_failures: int = 0
    down_since: float | None = None
    given_up: bool = False
    _next: int = 0

    def pick(self) -> openai.AsyncOpenAI:
        self._next = (self._next + 1) % len(self.clients)
        return self.clients[self._next]

    @property
    def up(self) -> bool:
        return self.down_since is None and not self.given_up


def _clients(url: str, settings: StageSettings, api_key: str, pools: int) -> list[openai.AsyncOpenAI]:
    """One client on the lean transport for a plain-http URL; else ``pools`` clients on httpx's own stack."""
    import openai

    lean = lean_http_client(url, settings.timeout_s)
    if lean is not None:
        return [
            openai.AsyncOpenAI(
                base_url=url, api_key=api_key, max_retries=0, timeout=settings.timeout_s, http_client=lean
            )
        ]
    return [
        openai.AsyncOpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=settings.timeout_s)
        for _ in range(pools)
    ]


@dataclass
class Outage:
    url: str
    down_s: float
    outcome: str  # "recovered" | "given up" | "still down when the run ended"

    @property
    def recovered(self) -> bool:
        return self.outcome == "recovered"


@dataclass
class EndpointPool:
    stage: str
    endpoints: list[Endpoint]
    settings: StageSettings
    log: Callable[[str], None]
    rng: random.Random = field(default_factory=random.Random)
    outages: list[Outage] = field(default_factory=list)
    _probes: set[asyncio.Task] = field(default_factory=set)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def open(
        cls,
        stage: str,
        urls: list[str],
        settings: StageSettings,
        api_key: str,
        pools: int,
        log: Callable[[str], None],
        rng: random.Random,
    ) -> EndpointPool:
        endpoints = [
            Endpoint(u, _clients(u, settings, api_key, pools), asyncio.Semaphore(settings.concurrency)) for u in urls
        ]
        return cls(stage, endpoints, settings, log, rng)

    async def acquire(self) -> Endpoint:
        """A slot on the least-loaded endpoint that is up; waits while all are down but some are probed."""
        while True:
            up = [e for e in self.endpoints if e.up]
            if not up:
                if all(e.given_up for e in self.endpoints):
                    raise EndpointsDown(self._given_up_message())
                changed = self._changed
                await changed.wait()
                continue
            ep = min(up, key=lambda e: e.load)
            ep.load += 1
            await ep.slots.acquire()
            if ep.up:
                return ep
            self.release(ep)  # it went down while this request waited for a slot

    def release(self, ep: Endpoint) -> None:
        ep.slots.release()
        ep.load -= 1

    def answered(self, ep: Endpoint) -> None:
        """The endpoint gave an HTTP answer (any status): it is reachable."""
        ep.consecutive_failures = 0

    def connection_failed(self, ep: Endpoint) -> None:
        ep.consecutive_failures += 1
        if ep.up and ep.consecutive_failures >= self.settings.down_after_failures:
            ep.down_since = time.monotonic()
            up = [e.url for e in self.endpoints if e.up]
            self.log(
                f"{self.stage}: endpoint {ep.url} is down ({ep.consecutive_failures} consecutive connection failures); "
                f"nothing is sent to it, it is probed with backoff for up to {self.settings.endpoint_patience_s:g} s"
                + (f"; traffic moves to {', '.join(up)}" if up else "; requests wait for it")
            )
            task = asyncio.create_task(self._probe(ep))
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)

    async def _probe(self, ep: Endpoint) -> None:
        import openai

        s = self.settings
        attempt = 0
        while True:
            attempt += 1
            down_for = time.monotonic() - ep.down_since
            left = s.endpoint_patience_s - down_for
            if left <= 0:
                ep.given_up = True
                self.outages.append(Outage(ep.url, round(down_for, 1), "given up"))
                self.log(
                    f"{self.stage}: endpoint {ep.url} down for {down_for:.1f} s: patience "
                    f"({s.endpoint_patience_s:g} s) exhausted, given up for this run"
                )
                self._notify()
                return
            await asyncio.sleep(min(backoff_delay(attempt, s.backoff_base_s, s.backoff_max_s, self.rng), left))
            try:
                await ep.pick().get("/models", cast_to=object)
            except openai.APIStatusError:
                pass  # an HTTP answer, whatever its status: the server is reachable again
            except openai.APIConnectionError:
                continue
            down_for = time.monotonic() - ep.down_since
            ep.down_since, ep.consecutive_failures = None, 0
            self.outages.append(Outage(ep.url, round(down_for, 1), "recovered"))
            self.log(f"{self.stage}: endpoint {ep.url} is up again after {down_for:.1f} s down; traffic resumes")
            self._notify()
            return

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _given_up_message(self) -> str:
        return (
            "every endpoint is down and was given up: "
            + ", ".join(f"{o.url} after {o.down_s:g} s down" for o in self.outages if o.outcome == "given up")
            + f" (llm.{self.stage}.endpoint_patience_s = {self.settings.endpoint_patience_s:g})"
        )

    async def close(self) -> None:
        for ep in self.endpoints:
            if ep.down_since is not None and not ep.given_up:
                down_for = time.monotonic() - ep.down_since
                self.outages.append(Outage(ep.url, round(down_for, 1), "still down when the run ended"))
                self.log(f"{self.stage}: endpoint {ep.url} still down when the run ended ({down_for:.1f} s)")
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        for ep in self.endpoints:
            for c in ep.clients:
                await c.close()
