"""A JobRun on the Redis hot queue: `kubectl get jobruns` shows what PostgreSQL alone would.

A hot runner's claim writes nothing to PostgreSQL (the record says pending until the finish);
the operator, given the same Redis, shows the JobRun Running under Redis's attempt while a
runner holds it, then Succeeded. A real operator and runner, a real Redis and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store.hot_queue import outbox
from support.operator import OperatorProcess, RunnerProcess, get_json, running
from support.polling import wait_until


@pytest.fixture
def redis_url() -> Iterator[str]:
    server: ThrowawayRedis
    with throwaway_redis() as server:
        yield server.url


def test_a_job_run_held_in_redis_shows_running_then_succeeded(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    kubectl: Any,
    redis_url: str,
) -> None:
    outbox.switch(operator_dsn, on=True)
    hot = ["--hot-queue-url", redis_url]
    operator = OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, extra_args=hot)
    with running(operator), RunnerProcess(operator_dsn, tmp_path, extra_args=hot) as runner:
        job_run = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": "held"},
            "spec": {"job": {"handler": {"name": "tests.until_cancelled"}}, "args": {"seconds": 8}},
        }
        kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(job_run))

        def status() -> dict[str, Any]:
            operator.assert_alive()
            return get_json(kubectl, "-n", namespace, "jr", "held").get("status") or {}

        wait_until(lambda: status().get("phase") == "Running", within=60, what="Running")
        assert status()["attempt"] == 1 and status().get("startedAt")
        with psycopg.connect(operator_dsn) as conn:
            recorded = conn.execute("SELECT state FROM job_runs").fetchall()
        assert recorded == [("pending",)]  # Running comes from Redis, not from the record

        wait_until(lambda: status().get("phase") == "Succeeded", within=60, what="Succeeded")
        assert status()["attempt"] == 1
        assert runner.process is not None and runner.process.poll() is None
