"""The history API: PostgreSQL's run history as ``runs.history.sundial.dev``, per namespace.

etcd keeps a bounded window of JobRuns; every run is in PostgreSQL. ``sundial history-api``
(``history_service``, a process apart from the operator) serves that history as an aggregated
API (the chart's APIService ``v1alpha1.history.sundial.dev``):

    GET /apis/history.sundial.dev/v1alpha1/namespaces/NS/runs?job=NAME&limit=N&continue=T

Users call the API server with their own kubeconfig; it authenticates them, RBAC decides
(``list`` on ``runs.history.sundial.dev`` in that namespace, which the chart aggregates into
``view``), and it forwards the request here with its front-proxy certificate. This server
takes nothing else: TLS requires that certificate (``front_proxy``), and each request is
authorized again with a SubjectAccessReview for the caller it names, so a namespace's history
is read only by those who may read that namespace's runs
(docs/adr/0048-history-as-an-aggregated-api.md).

Read-only and bounded: one page of at most ``MAX_LIMIT`` runs per request, newest first, paged
back with ``continue`` (the smallest id of the previous page, as ``kubectl get`` pages). Error
text is left out. Every replica serves it: reading history needs no lease.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Final

from aiohttp import web

from sundial.operator import front_proxy
from sundial.store import history
from sundial.store.pool import Pool

__all__ = [
    "GROUP",
    "MAX_LIMIT",
    "RESOURCE",
    "VERSION",
    "Authorizer",
    "HistoryApi",
    "routes",
    "row_json",
]

log = logging.getLogger("sundial.history")

GROUP: Final = "history.sundial.dev"
VERSION: Final = "v1alpha1"
RESOURCE: Final = "runs"
KIND: Final = "Run"
DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 1000
#: How often the server reads the cluster's front proxy again (a rotated CA is picked up).
FRONT_PROXY_REFRESH_SECONDS: Final = 60.0
#: How long one caller's answer for one namespace is reused: ``kubectl sundial history --all``
#: pages through thousands of runs, one SubjectAccessReview per page would be a call per page.
DECISION_SECONDS: Final = 10.0

#: ``await authorize(caller, namespace)``: whether ``caller`` may list runs there, and why not.
Authorizer = Callable[[front_proxy.Caller, str], Awaitable[tuple[bool, str]]]


def row_json(row: history.HistoryRow, *, with_error_text: bool = True) -> dict[str, Any]:
    """One run, with the JSON names of JobRun status; ``sundial runs -o json`` prints the same
    object, so these keys are kept stable (new ones may be added).

    ``with_error_text=False`` leaves ``lastError`` out (the key stays, as null): the API serves
    everyone who may read the namespace's runs, and a handler's traceback can carry what the
    handler put in its message (a customer id, a URL with a token). ``sundial runs``, whose
    caller already holds the DSN, keeps it."""

    def stamp(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat().replace("+00:00", "Z")

    waits = row.why_it_waits()
    return {
        "runId": str(row.id),
        "namespace": row.namespace,
        "job": row.job,
        "state": row.state,
        "attempt": row.attempt,
        "fireTime": stamp(row.fire_time),
        "startedAt": stamp(row.started_at),
        "finishedAt": stamp(row.finished_at),
        "failureReason": row.failure_reason,
        "failureDetail": row.failure_detail,
        "podName": row.pod_name,
        "podExitCode": row.pod_exit_code,
        "podReason": row.pod_reason,
        "queue": row.queue,
        "createdAt": stamp(row.created_at),
        "runAt": stamp(row.run_at),
        "lastError": row.last_error if with_error_text else None,
        # Why a run that has not finished and is not running waits (scheduling.waiting).
        "waiting": None
        if waits is None
        else {"reason": str(waits.reason), "message": waits.message},
    }


def _status(code: int, reason: str, message: str) -> web.Response:
    """An error as the Kubernetes API writes one, so kubectl prints its message."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code)


def _integer(query: Mapping[str, str], key: str, low: int, high: int) -> int | None:
    text = query.get(key)
    if text is None or text == "":
        return None
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{key} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


def _resource_list() -> dict[str, Any]:
    resource = {
        "name": RESOURCE,
        "singularName": "run",
        "namespaced": True,
        "kind": KIND,
        "verbs": ["list"],
    }
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{VERSION}",
        "resources": [resource],
    }


def _group() -> dict[str, Any]:
    version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    }


class _Decisions:
    """Answers of the authorizer, each kept ``DECISION_SECONDS``."""

    def __init__(self, authorize: Authorizer, clock: Callable[[], float] = time.monotonic) -> None:
        self._authorize = authorize
        self._clock = clock
        self._kept: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    async def allowed(self, caller: front_proxy.Caller, namespace: str) -> tuple[bool, str]:
        extra = tuple(sorted((key, values) for key, values in caller.extra.items()))
        key = (caller.user, caller.groups, extra, namespace)
        now = self._clock()
        kept = self._kept.get(key)
        if kept is not None and now - kept[0] < DECISION_SECONDS:
            return kept[1], kept[2]
        allowed, reason = await self._authorize(caller, namespace)
        if len(self._kept) > 10_000:  # many users at once: forget, never grow without bound
            self._kept.clear()
        self._kept[key] = (now, allowed, reason)
        return allowed, reason


def routes(
    pool: Pool,
    proxy: Callable[[], front_proxy.FrontProxy],
    authorize: Authorizer,
    *,
    hot: Any = None,
) -> list[web.RouteDef]:
    """The API's routes. Each request must come from the front proxy (``proxy()``: the one the
    cluster publishes now) and, for runs, be allowed by ``authorize``. ``hot``: the hot queue's
    Redis client, to list the runs a claimer holds there as running."""
    decisions = _Decisions(authorize)
    base = f"/apis/{GROUP}/{VERSION}"

    def caller_of(request: web.Request) -> front_proxy.Caller:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        return proxy().caller(peer, request.headers)

    async def discovery(request: web.Request, document: dict[str, Any]) -> web.Response:
        try:
            caller_of(request)
        except front_proxy.NotFromFrontProxyError as error:
            return _status(401, "Unauthorized", str(error))
        return web.json_response(document)

    async def api_group_list(request: web.Request) -> web.Response:
        return await discovery(request, {"kind": "APIGroupList", "groups": [_group()]})

    async def api_group(request: web.Request) -> web.Response:
        return await discovery(request, _group())

    async def resource_list(request: web.Request) -> web.Response:
        return await discovery(request, _resource_list())

    async def list_runs(request: web.Request) -> web.Response:
        try:
            caller = caller_of(request)
        except front_proxy.NotFromFrontProxyError as error:
            return _status(401, "Unauthorized", str(error))
        namespace = request.match_info["namespace"]
        try:
            allowed, reason = await decisions.allowed(caller, namespace)
        except Exception as error:  # the review could not be made: refuse, say why
            log.warning("history authorization failed", extra={"error": str(error)})
            return _status(503, "ServiceUnavailable", f"cannot authorize the request now: {error}")
        if not allowed:
            return _status(
                403,
                "Forbidden",
                f'{RESOURCE}.{GROUP} is forbidden: User "{caller.user}" cannot list resource '
                f'"{RESOURCE}" in API group "{GROUP}" in the namespace "{namespace}"'
                + (f": {reason}" if reason else ""),
            )
        query = request.query
        try:
            limit = _integer(query, "limit", 1, 2**31) or DEFAULT_LIMIT
            before = _integer(query, "continue", 1, 2**63 - 1)
        except ValueError as error:
            return _status(400, "BadRequest", str(error))
        limit = min(limit, MAX_LIMIT)
        try:
            rows = await history.recent(
                pool,
                namespace=namespace,
                job=query.get("job") or None,
                limit=limit,
                before=before,
                hot=hot,
            )
        except Exception as error:  # a down store is a 503 for the user, never a dead server
            log.warning("history request failed", extra={"error": str(error)})
            return _status(503, "ServiceUnavailable", f"the run store cannot be read now: {error}")
        items = []
        for row in rows:
            item = row_json(row, with_error_text=False)
            metadata = {
                "name": item["runId"],
                "namespace": namespace,
                "creationTimestamp": item["createdAt"],
            }
            items.append(
                {"kind": KIND, "apiVersion": f"{GROUP}/{VERSION}", "metadata": metadata, **item}
            )
        following = items[-1]["runId"] if len(items) == limit else None
        metadata = {"continue": following} if following else {}
        return web.json_response(
            {
                "kind": f"{KIND}List",
                "apiVersion": f"{GROUP}/{VERSION}",
                "metadata": metadata,
                "items": items,
            }
        )

    async def every_namespace(request: web.Request) -> web.Response:
        try:
            caller_of(request)
        except front_proxy.NotFromFrontProxyError as error:
            return _status(401, "Unauthorized", str(error))
        return _status(
            400,
            "BadRequest",
            f"{RESOURCE}.{GROUP} is read one namespace at a time: give -n NAMESPACE (RBAC "
            "grants history per namespace)",
        )

    return [
        web.get("/apis", api_group_list),
        web.get(f"{base}/{RESOURCE}", every_namespace),
        web.get(f"/apis/{GROUP}", api_group),
        web.get(base, resource_list),
        web.get(f"{base}/namespaces/{{namespace}}/{RESOURCE}", list_runs),
    ]


class HistoryApi:
    """The history API's HTTPS server: ``routes`` on ``port``, TLS from ``context``.

    Given a ``follower`` (and ``context_of``, the TLS context for a front proxy), it reads the
    cluster's front proxy again every ``refresh_seconds`` and, when its CA or names changed,
    listens again with a context of the new CA: a rotation needs no operator restart."""

    def __init__(
        self,
        port: int,
        context: ssl.SSLContext,
        routes: list[web.RouteDef],
        host: str = "0.0.0.0",
        *,
        follower: front_proxy.FrontProxyFollower | None = None,
        context_of: Callable[[front_proxy.FrontProxy], ssl.SSLContext] | None = None,
        refresh_seconds: float = FRONT_PROXY_REFRESH_SECONDS,
    ) -> None:
        self.port = port
        self.host = host
        self._context = context
        self._routes = routes
        self._runner: web.AppRunner | None = None
        self._follower = follower
        self._context_of = context_of
        self._refresh_seconds = refresh_seconds
        self._following: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._listen()
        if self._follower is not None and self._context_of is not None:
            self._following = asyncio.create_task(self._follow(), name="front-proxy")

    async def stop(self) -> None:
        if self._following is not None:
            self._following.cancel()
            await asyncio.gather(self._following, return_exceptions=True)
            self._following = None
        await self._close()

    async def refresh(self) -> bool:
        """Read the front proxy again; listen with a context of it if it changed (``True``)."""
        assert self._follower is not None and self._context_of is not None
        if not await self._follower.refresh():
            return False
        context = self._context_of(self._follower.current)
        await self._close()
        self._context = context
        await self._listen()
        log.info("the cluster's front proxy changed: the history API serves with its new CA")
        return True

    async def _follow(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_seconds)
            try:
                await self.refresh()
            except Exception as error:  # keep serving with the CA we have; say why
                log.warning(
                    "cannot read the cluster's front proxy again; the history API keeps the CA "
                    "it has",
                    extra={"error": str(error)},
                )

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_routes(self._routes)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._context)
        await site.start()

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
