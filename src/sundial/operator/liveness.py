"""The liveness endpoint: ``GET /healthz`` answers 200 while the event loop turns.

It answers for a standby too (a standby is alive; it is just not acting), with the role in
the body, so a probe restarts a wedged process but never a healthy standby. The same port
serves ``GET /metrics``: the process's Prometheus metrics (trigger, maintainer), in the text
exposition format, to the callers ``metrics_access`` lets through when one is given (they name
every namespace's ScheduledJobs: ``operator.metrics_access``).

Given a certificate and a port of their own (``metrics_tls``, reloaded when its files change),
the metrics are served there over HTTPS only, so the scrape's bearer token never crosses the
Pod network in clear; the health port then answers ``/metrics`` with 404 naming the HTTPS port,
and stays plain HTTP for the kubelet's probes
(docs/adr/0053-operator-metrics-behind-kubernetes-auth.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import prometheus_client
from aiohttp import web

from sundial.operator.metrics_access import MetricsAccess
from sundial.operator.metrics_tls import MetricsTls

__all__ = ["LivenessServer"]


class LivenessServer:
    def __init__(
        self,
        port: int,
        role: Callable[[], str],
        *,
        host: str = "0.0.0.0",
        routes: Sequence[web.RouteDef] = (),
        metrics_access: MetricsAccess | None = None,
        metrics_tls: MetricsTls | None = None,
        reload_seconds: float | None = None,
    ) -> None:
        self.port = port
        self._metrics_tls = metrics_tls
        self._reload_seconds = reload_seconds
        self._reloading: asyncio.Task[None] | None = None
        self._access = metrics_access
        self._routes = tuple(routes)
        self.host = host
        self._role = role
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "role": self._role()})

    async def _metrics(self, request: web.Request) -> web.Response:
        if self._metrics_tls is not None and not request.secure:
            text = f"/metrics is served over HTTPS on port {self._metrics_tls.port}\n"
            return web.Response(status=404, text=text)
        if self._access is not None:
            denial = await self._access.check(request.headers.get("Authorization"))
            if denial is not None:
                headers = {"WWW-Authenticate": "Bearer"} if denial.status == 401 else {}
                text = denial.reason + "\n"
                return web.Response(status=denial.status, text=text, headers=headers)
        return web.Response(
            body=prometheus_client.generate_latest(),
            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST},
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_routes(self._routes)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        if self.port:
            await web.TCPSite(self._runner, self.host, self.port).start()
        tls = self._metrics_tls
        if tls is not None:
            await web.TCPSite(self._runner, self.host, tls.port, ssl_context=tls.context).start()
            watch = tls.watch() if self._reload_seconds is None else tls.watch(self._reload_seconds)
            self._reloading = asyncio.create_task(watch, name="metrics-certificate")

    async def stop(self) -> None:
        if self._reloading is not None:
            self._reloading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloading
            self._reloading = None
        if self._runner is not None:
            await self._runner.cleanup()
