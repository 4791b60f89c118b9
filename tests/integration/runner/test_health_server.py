"""/metrics, /healthz and /readyz over real HTTP on 127.0.0.1."""

from __future__ import annotations

import aiohttp

from sundial.observability import metrics
from sundial.runner import health


async def test_endpoints_answer_on_an_ephemeral_port() -> None:
    runner_metrics = metrics.RunnerMetrics()
    runner_metrics.record_outcome("sample.thread_ok", "succeeded")
    ready = {"value": (False, "not connected to PostgreSQL")}
    server = health.HealthServer(
        runner_metrics, host="127.0.0.1", port=0, ready=lambda: ready["value"]
    )
    port = await server.start()
    assert port > 0
    try:
        async with aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{port}"
            async with session.get(f"{base}/metrics") as response:
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain")
                body = await response.text()
                assert (
                    'sundial_runs_total{handler="sample.thread_ok",outcome="succeeded"} 1.0' in body
                )
            async with session.get(f"{base}/healthz") as response:
                assert response.status == 200
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                assert "not connected" in await response.text()
            ready["value"] = (True, "ok")
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200
    finally:
        await server.stop()
