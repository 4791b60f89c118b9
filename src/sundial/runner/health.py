"""The runner's HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

It is served by the runner's own event loop on purpose: if a handler blocks the loop, the
liveness probe times out, which is the truth. ``/healthz`` answers 200 while ``live()`` is
true; ``/readyz`` answers 200 while ``ready()`` is true (the claim loop turns it off while it
cannot reach PostgreSQL and while draining on SIGTERM), otherwise 503 with the reason.

A port that cannot be bound raises ``PortUnavailableError`` naming the address and what to
pass instead, so a second runner on one host fails with a sentence, not an ``OSError``.
"""

from __future__ import annotations

import errno
from collections.abc import Callable

from aiohttp import web

from sundial import errors as sundial_errors
from sundial.observability import metrics

Probe = Callable[[], tuple[bool, str]]


class PortUnavailableError(sundial_errors.SundialError, OSError):
    """The metrics port is taken (or not ours to bind); the message says what to do."""


def _always_ok() -> tuple[bool, str]:
    return True, "ok"


class HealthServer:
    def __init__(
        self,
        runner_metrics: metrics.RunnerMetrics,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        live: Probe = _always_ok,
        ready: Probe = _always_ok,
    ) -> None:
        self._metrics = runner_metrics
        self.host = host
        self.port = port
        self._live = live
        self._ready = ready
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with ``port=0``)."""
        app = web.Application()
        app.router.add_get("/metrics", self._serve_metrics)
        app.router.add_get("/healthz", self._serve_live)
        app.router.add_get("/readyz", self._serve_ready)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as error:
            await self._runner.cleanup()
            self._runner = None
            message = _unavailable(self.host, self.port, error)
            raise PortUnavailableError(error.errno, message) from error
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        response = web.Response(body=self._metrics.exposition())
        response.headers["Content-Type"] = metrics.CONTENT_TYPE
        return response

    async def _serve_live(self, request: web.Request) -> web.Response:
        return _probe_response(self._live)

    async def _serve_ready(self, request: web.Request) -> web.Response:
        return _probe_response(self._ready)


def _unavailable(host: str, port: int, error: OSError) -> str:
    why = "is already in use" if error.errno == errno.EADDRINUSE else f"cannot be bound ({error})"
    return (
        f"the metrics port {host}:{port} {why} (another runner on this host?): "
        "pass --metrics-port N for a free port N, --metrics-port 0 for any free port "
        "(the port chosen is logged in 'runner starting'), or --metrics-port -1 to serve "
        "no /metrics, /healthz or /readyz"
    )


def _probe_response(probe: Probe) -> web.Response:
    ok, reason = probe()
    return web.Response(status=200 if ok else 503, text=reason + "\n")
