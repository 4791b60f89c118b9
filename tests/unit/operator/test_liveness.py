"""The operator's liveness port answers /healthz with its role and serves /metrics (the
trigger's and the maintainer's metrics live in the process's default registry)."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request

from sundial.observability import maintainer_metrics
from sundial.operator import liveness


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers["Content-Type"], response.read().decode()


async def test_healthz_names_the_role_and_metrics_include_the_maintainers() -> None:
    port = _free_port()
    server = liveness.LivenessServer(port, lambda: "standby", host="127.0.0.1")
    await server.start()
    try:
        maintainer_metrics.LEADING.set(0)
        _, health = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/healthz")
        content_type, metrics = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
    finally:
        await server.stop()
    assert json.loads(health) == {"status": "ok", "role": "standby"}
    assert content_type.startswith("text/plain")
    assert "sundial_maintainer_leading 0.0" in metrics.splitlines()
    assert any(
        line.startswith("sundial_maintainer_runs_archived_total") for line in metrics.splitlines()
    )
