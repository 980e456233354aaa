"""Helpers for the servers and browsers tests start: a free loopback port, default signal handlers."""

from __future__ import annotations

import signal
import socket


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_signals() -> None:
    """Runs in the child before exec: undo an ignored SIGINT/SIGTERM inherited from a non-interactive shell."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
