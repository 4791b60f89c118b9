"""The operator's /metrics behind a bearer token: the answers the HTTP port gives for each kind
of caller, how long an answer is kept, and that an unreachable API server keeps nothing. The
reviews here are plain functions that answer as the API server would; the real API server's
TokenReview and SubjectAccessReview are exercised in
tests/cluster/operator/test_operator_metrics.py."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request

import pytest

from sundial.operator import liveness, metrics_access
from sundial.operator.kube import Reviewer

READER = Reviewer(user="system:serviceaccount:monitoring:prometheus", uid="1", groups=(), extra={})
NOSY = Reviewer(user="system:serviceaccount:team-b:nosy", uid="2", groups=(), extra={})


class Directory:
    """Tokens and grants, counting the reviews asked."""

    def __init__(self) -> None:
        self.users = {"reader-token": READER, "nosy-token": NOSY}
        self.allowed = {READER.user}
        self.reviews = 0
        self.down = False

    async def review_token(self, token: str) -> Reviewer | None:
        self.reviews += 1
        if self.down:
            raise ConnectionError("connection refused")
        return self.users.get(token)

    async def may_get(self, reviewer: Reviewer, path: str) -> tuple[bool, str]:
        assert path == "/metrics"
        return reviewer.user in self.allowed, "" if reviewer.user in self.allowed else "no RBAC"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("header", "status", "says"),
    [
        (None, 401, "send a bearer token"),
        ("Basic dXNlcjpwYXNz", 401, "send a bearer token"),
        ("Bearer ", 401, "send a bearer token"),
        ("Bearer someone-elses", 401, "does not authenticate"),
        ("Bearer nosy-token", 403, "system:serviceaccount:team-b:nosy may not get /metrics"),
    ],
)
async def test_callers_without_the_grant_are_refused_with_a_reason(
    header: str | None, status: int, says: str
) -> None:
    access = metrics_access.MetricsAccess(Directory().review_token, Directory().may_get)
    denial = await access.check(header)
    assert denial is not None and denial.status == status and says in denial.reason


async def test_an_answer_is_kept_for_a_while_then_asked_again() -> None:
    directory, clock = Directory(), Clock()
    access = metrics_access.MetricsAccess(directory.review_token, directory.may_get, clock=clock)
    assert await access.check("Bearer reader-token") is None
    assert await access.check("bearer reader-token") is None
    assert directory.reviews == 1
    directory.allowed.clear()  # the binding removed
    clock.now += metrics_access.DECISION_SECONDS + 1
    denial = await access.check("Bearer reader-token")
    assert denial is not None and denial.status == 403 and directory.reviews == 2


async def test_an_api_server_away_is_a_503_and_nothing_is_kept() -> None:
    directory = Directory()
    access = metrics_access.MetricsAccess(directory.review_token, directory.may_get)
    directory.down = True
    denial = await access.check("Bearer reader-token")
    assert denial is not None and denial.status == 503
    directory.down = False
    assert await access.check("Bearer reader-token") is None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str, token: str | None = None) -> tuple[int, str, str | None]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(), None
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), error.headers.get("WWW-Authenticate")


async def test_the_port_guards_metrics_and_leaves_healthz_open() -> None:
    directory = Directory()
    port = _free_port()
    server = liveness.LivenessServer(
        port,
        lambda: "leader",
        host="127.0.0.1",
        metrics_access=metrics_access.MetricsAccess(directory.review_token, directory.may_get),
    )
    await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        health = await asyncio.to_thread(_get, f"{base}/healthz")
        anonymous = await asyncio.to_thread(_get, f"{base}/metrics")
        nosy = await asyncio.to_thread(_get, f"{base}/metrics", "nosy-token")
        reader = await asyncio.to_thread(_get, f"{base}/metrics", "reader-token")
    finally:
        await server.stop()
    assert health[0] == 200
    assert anonymous[0] == 401 and anonymous[2] == "Bearer"
    assert nosy[0] == 403 and "no RBAC" in nosy[1]
    assert reader[0] == 200 and "sundial_maintainer_leading" in reader[1]
