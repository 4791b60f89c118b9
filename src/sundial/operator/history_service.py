"""``sundial history-api``: the history API as a process of its own.

The history API is the one read path other Pods can reach (the API server's aggregation layer
dials it), so it does not run inside the operator: a flaw in it must not hand out the
operator's ServiceAccount token, which may write JobRuns and create Pods in every namespace.
This process runs under a ServiceAccount that may only review tokens and access
(``system:auth-delegator``) and read the front proxy's CA in ``kube-system``, and it reads
PostgreSQL with a login of the reader's role, which can change nothing
(docs/adr/0054-the-history-api-apart-from-the-operator.md).

Fails fast on what only a person can fix: without Kubernetes credentials, a front proxy's CA
it may read, or a readable certificate, it exits with the reason, so the Deployment shows a
crash loop that says what to fix rather than a Pod that listens and answers nobody. A
database that does not answer yet is waited for (it comes up beside this Pod during an
install); the port opens, and the Pod turns Ready, once it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import config as kube_config
from kubernetes.client import exceptions

from sundial.errors import SundialError
from sundial.operator import front_proxy, history_api, kube
from sundial.store import hot_queue, reconnect, schema_version
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox

__all__ = ["HistoryServiceConfig", "NotServedError", "serve"]

log = logging.getLogger("sundial.history")


class NotServedError(SundialError):
    """The history API cannot start; the message says what to fix."""


@dataclass(frozen=True)
class HistoryServiceConfig:
    """Where the history API listens, its serving certificate and key (PEM files), the DSN it
    reads with, and the hot queue's Redis when the database's hot queue is on (the runs a
    claimer holds there are then listed running)."""

    dsn: str
    port: int
    cert_file: str
    key_file: str
    hot_queue_url: str | None = None


async def serve(config: HistoryServiceConfig, stop: asyncio.Event) -> int:
    """Serve until ``stop`` is set; the exit status for the process."""
    try:
        api = await asyncio.to_thread(kube.KubeApi)
    except kube_config.ConfigException as error:
        raise NotServedError(
            f"no Kubernetes credentials ({error}): run it in a Pod with a ServiceAccount, or "
            "set KUBECONFIG"
        ) from error
    try:
        pool = await _connected(config.dsn, stop)
    except BaseException:
        api.close()
        raise
    if pool is None:
        api.close()
        return 0
    redis = hot_queue.open_client(config.hot_queue_url) if config.hot_queue_url else None
    try:
        await warn_on_mode(pool, url_given=redis is not None)
        try:
            server = await _started(config, api, pool, redis)
        except (exceptions.ApiException, urllib3.exceptions.HTTPError) as error:
            raise NotServedError(f"the API server did not answer as expected: {error}") from error
        log.info("history API serving", extra={"port": config.port})
        try:
            await stop.wait()
        finally:
            await server.stop()
        return 0
    finally:
        api.close()
        await pool.close()
        if redis is not None:
            await redis.aclose()


async def warn_on_mode(pool: store_pool.Pool, *, url_given: bool) -> str | None:
    """Log a warning (and return it) when the process and the database disagree on the hot
    queue. The runners, the scheduler and the operator refuse to start then; the history API
    serves anyway, since reading is never unsafe, but without the Redis it lists the runs
    claimers hold there as pending, and with a Redis the database no longer uses it may list
    finished work as running."""
    problem = await outbox.mode_problem(pool, url_given=url_given, component="history API")
    if problem is not None:
        log.warning(
            "the history API lists runs as the record has them, not as they are: " + problem
        )
    return problem


async def _connected(dsn: str, stop: asyncio.Event) -> store_pool.Pool | None:
    """The reader's pool, retried until PostgreSQL answers (``None``: stopped first). During
    an install the database and the reader's login come up beside this Pod, so an unreachable
    database is waited for, not a reason to exit; the Pod is not Ready until then."""
    retry = reconnect.Backoff("cannot connect to PostgreSQL; retrying", logger=log)
    while not stop.is_set():
        try:
            return await schema_version.open_compatible_pool(
                dsn, "history API", max_size=4, name="sundial-history"
            )
        except reconnect.ERRORS as error:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), retry.failed(error))
    return None


async def _started(
    config: HistoryServiceConfig, api: kube.KubeApi, pool: store_pool.Pool, redis: Any = None
) -> history_api.HistoryApi:
    where = f"{front_proxy.CONFIG_MAP_NAMESPACE}/{front_proxy.CONFIG_MAP}"

    async def published() -> Mapping[str, str] | None:
        try:
            return await api.config_map_data(
                front_proxy.CONFIG_MAP_NAMESPACE, front_proxy.CONFIG_MAP
            )
        except exceptions.ApiException as error:
            if error.status in (401, 403):
                raise NotServedError(
                    f"this ServiceAccount may not read the ConfigMap {where} (HTTP "
                    f"{error.status}): bind it to the Role extension-apiserver-authentication-"
                    "reader in kube-system (the chart does)"
                ) from error
            raise

    def context_of(proxy: front_proxy.FrontProxy) -> ssl.SSLContext:
        return proxy.server_context(config.cert_file, config.key_file)

    follower = front_proxy.FrontProxyFollower(
        published, front_proxy.FrontProxy.from_config_map(await published())
    )

    async def authorize(caller: front_proxy.Caller, namespace: str) -> tuple[bool, str]:
        return await api.may(
            caller.user,
            caller.groups,
            caller.extra,
            verb="list",
            group=history_api.GROUP,
            resource=history_api.RESOURCE,
            namespace=namespace,
        )

    server = history_api.HistoryApi(
        config.port,
        context_of(follower.current),
        history_api.routes(pool, lambda: follower.current, authorize, hot=redis),
        follower=follower,
        context_of=context_of,
    )
    await server.start()
    return server
