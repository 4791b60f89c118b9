"""``sundial pod-launcher`` as its own process: launches a run's Pod and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from support.pods import Job, maintenance, run_pods, template, wait_state

pytestmark = [pytest.mark.usefixtures("kwok_nodes"), pytest.mark.timeout(120)]


async def test_the_command_runs_a_pod_run_to_completion(
    pool, store_dsn, kubeconfig, core_api, namespace, tmp_path
):
    job = Job(pool, namespace)
    await job.define(template())
    run_id = await job.submit()
    log_path = tmp_path / "launcher.log"
    with log_path.open("w") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sundial",
            "pod-launcher",
            "--dsn",
            store_dsn,
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            namespace,
            "--instance",
            namespace,
            "--poll-seconds",
            "0.2",
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            async with maintenance(pool):
                row = await wait_state(pool, run_id, "completed", "failed", "dead_lettered")
        finally:
            process.send_signal(signal.SIGTERM)
            returncode = await asyncio.wait_for(process.wait(), 30)

    assert row["state"] == "completed", log_path.read_text()
    [pod] = run_pods(core_api, namespace, run_id)
    assert row["pod_name"] == pod.metadata.name
    assert returncode == 0, log_path.read_text()
