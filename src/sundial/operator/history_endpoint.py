"""``GET /history``: the run history of PostgreSQL, for ``kubectl sundial history``.

The operator serves it on its HTTP port beside ``/healthz``; users reach it through the API
server's service proxy (``/api/v1/namespaces/NS/services/NAME/proxy/history``), so the API
server authenticates them and RBAC (``get`` on ``services/proxy`` of that one Service) decides
who may read it, and nobody but the operator holds the database DSN
(docs/adr/0026-history-through-the-service-proxy.md).

Read-only and bounded: one page of at most ``MAX_LIMIT`` runs per request, newest first, paged
back with ``before`` (the smallest id of the previous page). Standbys serve it too: reading
history needs no lease.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from aiohttp import web

from sundial.store import history
from sundial.store.pool import Pool

__all__ = ["MAX_LIMIT", "PATH", "routes", "row_json"]

log = logging.getLogger("sundial.operator.history")

PATH: Final = "/history"
DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 1000


def row_json(row: history.HistoryRow, *, with_error_text: bool = True) -> dict[str, Any]:
    """One run, with the JSON names of JobRun status; ``sundial runs -o json`` prints the same
    object, so these keys are kept stable (new ones may be added).

    ``with_error_text=False`` leaves ``lastError`` out (the key stays, as null): the endpoint
    serves whoever the API server lets through, and a handler's traceback can carry what the
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


def _bad(message: str) -> web.Response:
    return web.json_response({"error": message}, status=400)


def _integer(query: Mapping[str, str], key: str, low: int, high: int) -> int | None:
    text = query.get(key)
    if text is None or text == "":
        return None
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{key} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


def routes(pool: Pool) -> list[web.RouteDef]:
    """The endpoint's routes, for the operator's HTTP server."""

    async def serve(request: web.Request) -> web.Response:
        query = request.query
        namespace = query.get("namespace") or None
        if namespace is None:
            return _bad("give namespace=NS (and job=NAME for one ScheduledJob's runs)")
        try:
            limit = _integer(query, "limit", 1, MAX_LIMIT) or DEFAULT_LIMIT
            before = _integer(query, "before", 1, 2**63 - 1)
        except ValueError as error:
            return _bad(str(error))
        try:
            rows = await history.recent(
                pool, namespace=namespace, job=query.get("job") or None, limit=limit, before=before
            )
        except Exception as error:  # a down store is a 503 for the user, never a dead server
            log.warning("history request failed", extra={"error": str(error)})
            return web.json_response(
                {"error": f"the run store cannot be read now: {error}"}, status=503
            )
        items = [row_json(row, with_error_text=False) for row in rows]
        following = items[-1]["runId"] if len(items) == limit else None
        return web.json_response({"items": items, "before": following})

    return [web.get(PATH, serve)]
