"""The liveness endpoint: ``GET /healthz`` answers 200 while the event loop turns.

It answers for a standby too (a standby is alive; it is just not acting), with the role in
the body, so a probe restarts a wedged process but never a healthy standby. The same port
serves ``GET /metrics``: the process's Prometheus metrics (trigger, maintainer), in the text
exposition format, to the callers ``metrics_access`` lets through when one is given (they name
every namespace's ScheduledJobs: ``operator.metrics_access``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import prometheus_client
from aiohttp import web

from sundial.operator.metrics_access import MetricsAccess

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
    ) -> None:
        self.port = port
        self._access = metrics_access
        self._routes = tuple(routes)
        self.host = host
        self._role = role
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "role": self._role()})

    async def _metrics(self, request: web.Request) -> web.Response:
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
        await web.TCPSite(self._runner, self.host, self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
