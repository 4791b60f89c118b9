"""Many ScheduledJobs at once all reach Ready; the operator's peak memory is reported.

200 here keeps the tier short; ``bench/operator_memory.py --jobs 1000`` is the full figure.
"""

from __future__ import annotations

import json
from typing import Any

from support.operator import OperatorProcess, get_json
from support.polling import wait_until

COUNT = 200


def test_two_hundred_scheduled_jobs_all_become_ready(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str, capsys: Any
):
    items = [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": f"job-{index:04d}"},
            "spec": {"schedule": "0 3 * * *", "handler": {"name": "tests.ok"}},
        }
        for index in range(COUNT)
    ]
    kubectl(
        "create",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
    )

    def ready_count() -> int:
        sundial_operator.assert_alive()
        listing = get_json(kubectl, "-n", namespace, "sj")
        return sum(
            1
            for item in listing["items"]
            for condition in (item.get("status") or {}).get("conditions") or ()
            if condition["type"] == "Ready" and condition["status"] == "True"
        )

    wait_until(lambda: ready_count() == COUNT, within=90, what=f"{COUNT} Ready", every=1.0)
    peak = sundial_operator.peak_rss_kib()
    with capsys.disabled():
        print(f"\noperator peak RSS (VmHWM) with {COUNT} ScheduledJobs: {peak / 1024:.1f} MiB")
    assert peak < 1024 * 1024, "more than 1 GiB for 200 ScheduledJobs"
