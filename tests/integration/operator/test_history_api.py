"""The history API of the operator: PostgreSQL's full history, paged, hot and archived runs,
for the front proxy's callers whom the authorizer allows.

A real HTTPS server with certificates made by openssl: a front-proxy CA whose client
certificate the "API server" (this test's client) presents, and a serving certificate. The
authorizer is a rule of the test's (the cluster tier asks a real API server).
"""

from __future__ import annotations

import datetime
import logging
import socket
import ssl
import subprocess
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from sundial.api import common, scheduled_job
from sundial.attempt import finishes
from sundial.operator import front_proxy, history_api, history_service
from sundial.store import claims, history, maintenance, runs, schedules
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox

NOW = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
ALICE = {"X-Remote-User": "alice", "X-Remote-Group": "team-default"}


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _pair(directory: Path, name: str, subject: str, ca: str | None, usage: str) -> None:
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
    if ca is None:
        _openssl(
            "req", "-x509", "-new", "-key", str(key), "-subj", subject, "-days", "1",
            "-addext", "basicConstraints=critical,CA:TRUE", "-out", str(cert),
        )  # fmt: skip
        return
    (directory / f"{name}.cnf").write_text(
        f"extendedKeyUsage={usage}\nsubjectAltName=IP:127.0.0.1\n"
    )
    _openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(directory / "r.csr"))
    _openssl(
        "x509", "-req", "-in", str(directory / "r.csr"), "-CA", str(directory / f"{ca}.crt"),
        "-CAkey", str(directory / f"{ca}.key"), "-CAcreateserial", "-days", "1",
        "-extfile", str(directory / f"{name}.cnf"), "-out", str(cert),
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pki")
    _pair(directory, "front-proxy-ca", "/CN=front-proxy-ca", None, "")
    _pair(directory, "front-proxy-client", "/CN=front-proxy-client", "front-proxy-ca", "clientAuth")
    _pair(directory, "impostor", "/CN=someone-else", "front-proxy-ca", "clientAuth")
    _pair(directory, "other-ca", "/CN=other-ca", None, "")
    _pair(directory, "other-client", "/CN=front-proxy-client", "other-ca", "clientAuth")
    _pair(directory, "serving-ca", "/CN=serving-ca", None, "")
    _pair(directory, "serving", "/CN=history", "serving-ca", "serverAuth")
    return directory


@dataclass
class Api:
    """The server's address and a session that presents ``client``'s certificate."""

    base: str
    pki: Path
    asked: list[tuple[str, str]]

    def context(self, client: str | None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "serving-ca.crt"))
        if client is not None:
            context.load_cert_chain(self.pki / f"{client}.crt", self.pki / f"{client}.key")
        return context

    async def get(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        headers: Mapping[str, str] = ALICE,
        client: str | None = "front-proxy-client",
    ) -> tuple[int, Any]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                self.base + path, params=params, headers=headers, ssl=self.context(client)
            ) as response,
        ):
            return response.status, await response.json()

    async def runs(self, namespace: str, **params: str) -> tuple[int, Any]:
        return await self.get(
            f"/apis/history.sundial.dev/v1alpha1/namespaces/{namespace}/runs", params
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def api(pool: store_pool.Pool, pki: Path) -> AsyncIterator[Api]:
    data = {
        "requestheader-client-ca-file": (pki / "front-proxy-ca.crt").read_text(),
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    }
    proxy = front_proxy.FrontProxy.from_config_map(data)
    asked: list[tuple[str, str]] = []

    async def authorize(caller: front_proxy.Caller, namespace: str) -> tuple[bool, str]:
        """Members of team-NS may read NS."""
        asked.append((caller.user, namespace))
        allowed = f"team-{namespace}" in caller.groups
        return allowed, "" if allowed else "no RBAC policy matched"

    port = _free_port()
    context = proxy.server_context(str(pki / "serving.crt"), str(pki / "serving.key"))
    server = history_api.HistoryApi(
        port, context, history_api.routes(pool, lambda: proxy, authorize), host="127.0.0.1"
    )
    await server.start()
    try:
        yield Api(f"https://127.0.0.1:{port}", pki, asked)
    finally:
        await server.stop()


async def _runs(pool: store_pool.Pool, name: str, count: int) -> list[int]:
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *", handler=common.HandlerSpec(name="handlers.ok")
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name=name, generation=1, spec=spec, now=NOW
    )
    made = [
        (await runs.submit(pool, uid, schedule_id=uid, fire_time=NOW.replace(minute=minute))).run_id
        for minute in range(count)
    ]
    claimed = await claims.claim(pool, "w", limit=100)
    await claims.finish(pool, "w", [finishes.succeeded(run) for run in claimed])
    return made


async def test_pages_walk_every_run_newest_first_hot_and_archived(
    pool: store_pool.Pool, api: Api
) -> None:
    made = await _runs(pool, "nightly", 5)
    await _runs(pool, "other", 2)
    await maintenance.ensure_partitions(pool)
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 7
    live = (await runs.submit(pool, "default/nightly")).run_id  # still in the hot table

    seen: list[str] = []
    token: str | None = None
    for _ in range(10):
        query = {"job": "nightly", "limit": "2"}
        if token:
            query["continue"] = token
        status, page = await api.runs("default", **query)
        assert status == 200, page
        assert page["kind"] == "RunList"
        seen += [item["runId"] for item in page["items"]]
        assert all(item["job"] == "nightly" for item in page["items"])
        assert all(item["metadata"]["name"] == item["runId"] for item in page["items"])
        token = page["metadata"].get("continue")
        if token is None:
            break
    assert seen == [str(run_id) for run_id in sorted([*made, live], reverse=True)]
    status, everything = await api.runs("default")  # every job of the namespace
    assert status == 200 and len(everything["items"]) == 8


async def test_bad_queries_say_what_to_send(api: Api) -> None:
    for query, words in [
        ({"limit": "0"}, "limit must be a whole number from 1"),
        ({"limit": "x"}, "limit must be"),
        ({"continue": "-3"}, "continue must be"),
    ]:
        status, answer = await api.runs("default", **query)
        assert status == 400
        assert answer["kind"] == "Status" and words in answer["message"]


async def test_another_namespace_sees_none_of_these_runs(pool: store_pool.Pool, api: Api) -> None:
    await _runs(pool, "nightly", 2)
    elsewhere = {"X-Remote-User": "bob", "X-Remote-Group": "team-elsewhere"}
    status, answer = await api.get(
        "/apis/history.sundial.dev/v1alpha1/namespaces/elsewhere/runs", headers=elsewhere
    )
    assert status == 200 and answer["items"] == []


async def test_a_caller_reads_only_the_namespaces_the_authorizer_allows(
    pool: store_pool.Pool, api: Api
) -> None:
    await _runs(pool, "nightly", 2)
    bob = {"X-Remote-User": "bob", "X-Remote-Group": "team-elsewhere"}
    status, answer = await api.get(
        "/apis/history.sundial.dev/v1alpha1/namespaces/default/runs", headers=bob
    )
    assert status == 403 and answer["reason"] == "Forbidden"
    assert 'User "bob" cannot list resource "runs"' in answer["message"]
    assert "no RBAC policy matched" in answer["message"]
    status, _ = await api.runs("default")
    assert status == 200
    # One answer per caller and namespace is reused for a few seconds, not asked per page.
    for _ in range(3):
        await api.runs("default")
    assert api.asked.count(("alice", "default")) == 1


async def test_nobody_but_the_front_proxy_is_answered(pool: store_pool.Pool, api: Api) -> None:
    """No client certificate, one from another CA, one from the right CA with a name the
    cluster does not allow: the handshake or the request fails. Without a user: 401."""
    await _runs(pool, "nightly", 1)
    for client in (None, "other-client"):
        with pytest.raises(aiohttp.ClientError):
            await api.get(
                "/apis/history.sundial.dev/v1alpha1/namespaces/default/runs", client=client
            )
    status, answer = await api.get(
        "/apis/history.sundial.dev/v1alpha1/namespaces/default/runs", client="impostor"
    )
    assert status == 401 and "not one of the front proxy's names" in answer["message"]
    status, answer = await api.get(
        "/apis/history.sundial.dev/v1alpha1/namespaces/default/runs", headers={}
    )
    assert status == 401 and "named no user" in answer["message"]
    assert not [ask for ask in api.asked if ask[0] != "alice"]


async def test_every_namespace_at_once_is_refused_with_what_to_give(api: Api) -> None:
    status, answer = await api.get("/apis/history.sundial.dev/v1alpha1/runs")
    assert status == 400 and "give -n NAMESPACE" in answer["message"]


async def test_discovery_says_what_the_api_serves(api: Api) -> None:
    status, resources = await api.get(
        "/apis/history.sundial.dev/v1alpha1", headers={"X-Remote-User": "system:kube-aggregator"}
    )
    assert status == 200
    assert resources["groupVersion"] == "history.sundial.dev/v1alpha1"
    [runs_resource] = resources["resources"]
    assert runs_resource["name"] == "runs" and runs_resource["namespaced"] is True
    assert runs_resource["verbs"] == ["list"]


async def test_error_text_stays_out_of_the_api_but_not_out_of_the_store(
    pool: store_pool.Pool, api: Api
) -> None:
    """A handler's message can carry what it was handling; the API answers everyone who may
    read the namespace's runs, so it gives the failure's class, never the text."""
    uid = uuid.uuid4()
    spec = scheduled_job.ScheduledJobSpec(
        schedule="*/5 * * * *",
        handler=common.HandlerSpec(name="handlers.fails"),
        retry=common.RetrySpec(max_retries=0),
    )
    await schedules.upsert(
        pool, uid=uid, namespace="default", name="charges", generation=1, spec=spec, now=NOW
    )
    await runs.submit(pool, uid, schedule_id=uid, fire_time=NOW)
    (claimed,) = await claims.claim(pool, "w", limit=1)
    secret = "card 4111-1111-1111-1111 declined for customer 42"
    await claims.finish(pool, "w", [finishes.failed(claimed, secret)])

    status, answer = await api.runs("default", job="charges")
    assert status == 200
    (item,) = answer["items"]
    assert item["failureReason"] is not None and item["lastError"] is None
    assert secret not in str(answer)

    (row,) = await history.recent(pool, namespace="default", job="charges", limit=1)
    assert secret in (history_api.row_json(row)["lastError"] or "")


async def test_a_rotated_front_proxy_ca_is_served_without_a_restart(
    pool: store_pool.Pool, pki: Path
) -> None:
    """The cluster publishes a new front-proxy CA: after a refresh, the API server's new
    certificate is answered and one of the old CA is refused in the handshake."""

    def published(ca: str) -> dict[str, str]:
        return {
            "requestheader-client-ca-file": (pki / f"{ca}.crt").read_text(),
            "requestheader-allowed-names": '["front-proxy-client"]',
        }

    data = published("front-proxy-ca")

    async def read() -> dict[str, str]:
        return data

    follower = front_proxy.FrontProxyFollower(read, front_proxy.FrontProxy.from_config_map(data))

    def context_of(proxy: front_proxy.FrontProxy) -> ssl.SSLContext:
        return proxy.server_context(str(pki / "serving.crt"), str(pki / "serving.key"))

    async def everyone(caller: front_proxy.Caller, namespace: str) -> tuple[bool, str]:
        return True, ""

    port = _free_port()
    server = history_api.HistoryApi(
        port,
        context_of(follower.current),
        history_api.routes(pool, lambda: follower.current, everyone),
        host="127.0.0.1",
        follower=follower,
        context_of=context_of,
        refresh_seconds=3600,
    )
    api = Api(f"https://127.0.0.1:{port}", pki, [])
    await server.start()
    try:
        assert (await api.runs("default"))[0] == 200
        assert await server.refresh() is False  # nothing changed: the socket stays as it is
        data = published("other-ca")
        assert await server.refresh() is True
        assert (await api.get("/apis", client="other-client"))[0] == 200
        with pytest.raises(aiohttp.ClientError):
            await api.runs("default")  # the old CA's certificate
    finally:
        await server.stop()


async def test_a_history_api_whose_hot_queue_setting_disagrees_says_what_to_change(
    pool: store_pool.Pool, store_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """It serves anyway (reading is never unsafe), but says why its listings may be off."""
    assert await history_service.warn_on_mode(pool, url_given=False) is None
    outbox.switch(store_dsn, on=True)
    try:
        with caplog.at_level(logging.WARNING, logger="sundial.history"):
            problem = await history_service.warn_on_mode(pool, url_given=False)
        assert problem is not None and "give the history API its Redis" in problem
        assert "--hot-queue-url" in caplog.text
        assert await history_service.warn_on_mode(pool, url_given=True) is None
    finally:
        outbox.switch(store_dsn, on=False)
    assert "turn it on" in (await history_service.warn_on_mode(pool, url_given=True) or "")
