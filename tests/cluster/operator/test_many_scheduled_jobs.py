"""Many ScheduledJobs at once all reach Ready; the operator's peak memory is reported.

200 here keeps the tier short; ``bench/operator_memory.py --jobs 1000`` is the full figure.
Storing and writing 200 is heavy work for the heap trimmer (``operator.heap``: 256 objects),
so once they are Ready and the operator idle it hands malloc's free memory back, and goes on
working after it.
"""

from __future__ import annotations

import json
from typing import Any

from support.operator import OperatorProcess, get_json, scheduled_job_manifest
from support.polling import wait_until

COUNT = 200


def test_two_hundred_scheduled_jobs_become_ready_then_the_freed_heap_is_returned(
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

    def trims() -> list[dict[str, Any]]:
        sundial_operator.assert_alive()
        lines = (line for line in sundial_operator.logs().splitlines() if line.startswith("{"))
        return [
            entry
            for entry in map(json.loads, lines)
            if entry.get("message") == "returned free heap to the OS"
        ]

    wait_until(lambda: len(trims()) >= 1, within=60, what="a heap trim once idle")
    trim = trims()[0]
    assert trim["cpu_ms"] >= 0
    assert trim["released_mib"] is not None
    with capsys.disabled():
        print(f"heap trim: {trim['released_mib']} MiB released in {trim['cpu_ms']} ms of CPU")

    # Still working after the trim: one more ScheduledJob is stored and becomes Ready.
    manifest = scheduled_job_manifest("after-trim", schedule="0 3 * * *")
    kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest)
    wait_until(
        lambda: ready_count() == COUNT + 1, within=60, what="Ready after the trim", every=1.0
    )
