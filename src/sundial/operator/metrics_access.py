"""Who may read the operator's ``/metrics``: a caller Kubernetes authenticates and authorizes.

The operator's metrics name ScheduledJobs and jobs of every namespace (the per-ScheduledJob
gauges, the runs ended by job), so they are tenant data: a Pod that can reach the operator's
port must not read them for nothing. The check is the one kube-rbac-proxy and
controller-runtime's metrics filter make, done in the operator itself:

1. the request carries ``Authorization: Bearer TOKEN``; without one: 401;
2. a TokenReview asks the API server whose token it is; unknown: 401;
3. a SubjectAccessReview asks whether that user may ``get`` the non-resource URL
   ``/metrics``; no: 403. The chart's ``RELEASE-sundial-metrics-reader`` ClusterRole grants
   exactly that, and its PodMonitor sends a token bound to it.

``/healthz`` stays open: the kubelet's probes carry no token, and it says nothing but the
role. Answers are kept for ``DECISION_SECONDS`` per token (by its SHA-256, never the token
itself), so a Prometheus scraping every 15 s costs the API server two reviews a minute at
most. When the API server cannot be asked, the answer is 503 and nothing is kept.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from sundial.operator.kube import Reviewer

__all__ = ["DECISION_SECONDS", "PATH", "Denial", "MetricsAccess"]

log = logging.getLogger("sundial.operator.metrics")

PATH: Final = "/metrics"
#: How long one token's answer is reused.
DECISION_SECONDS: Final = 30.0
#: Tokens whose answers are kept at once; past it the oldest half is dropped.
MAX_KEPT: Final = 1024


@dataclass(frozen=True)
class Denial:
    """Why a request may not read the metrics: an HTTP status and a reason for the caller."""

    status: int
    reason: str


class MetricsAccess:
    """``await access.check(authorization_header)``: ``None`` to serve, else a ``Denial``."""

    def __init__(
        self,
        review_token: Callable[[str], Awaitable[Reviewer | None]],
        may_get: Callable[[Reviewer, str], Awaitable[tuple[bool, str]]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review_token = review_token
        self._may_get = may_get
        self._clock = clock
        self._kept: dict[str, tuple[float, Denial | None]] = {}

    async def check(self, authorization: str | None) -> Denial | None:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return Denial(401, "send a bearer token: Authorization: Bearer TOKEN")
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        kept = self._kept.get(key)
        if kept is not None and now - kept[0] < DECISION_SECONDS:
            return kept[1]
        try:
            decision = await self._decide(token)
        except Exception as error:  # the API server away: say so, keep nothing
            log.warning("cannot check a /metrics caller: %s", error)
            return Denial(503, "the operator cannot reach the API server to check the token")
        if len(self._kept) >= MAX_KEPT:
            for old in sorted(self._kept, key=lambda k: self._kept[k][0])[: MAX_KEPT // 2]:
                del self._kept[old]
        self._kept[key] = (now, decision)
        return decision

    async def _decide(self, token: str) -> Denial | None:
        reviewer = await self._review_token(token)
        if reviewer is None:
            return Denial(401, "the API server does not authenticate this token")
        allowed, reason = await self._may_get(reviewer, PATH)
        if allowed:
            return None
        why = f" ({reason})" if reason else ""
        return Denial(
            403, f"{reviewer.user} may not get {PATH}{why}: bind the metrics-reader ClusterRole"
        )
