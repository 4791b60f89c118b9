"""What the schema cannot check becomes Stalled with a Warning Event; the rest is rejected at
admission with the CEL message. A bad object never stops the others from being reconciled."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.operator import (
    OperatorProcess,
    condition,
    events_for,
    get_json,
    scheduled_job_manifest,
)
from support.polling import wait_until


def stalled(kubectl: Any, namespace: str, name: str, operator: OperatorProcess) -> Any:
    def check() -> Any:
        operator.assert_alive()
        body = get_json(kubectl, "-n", namespace, "sj", name)
        found = condition(body, "Stalled")
        return found if found and found["status"] == "True" else None

    return wait_until(check, within=30, what=f"{name} Stalled=True")


def warning(kubectl: Any, namespace: str, name: str, reason: str) -> Any:
    def check() -> Any:
        return [
            event
            for event in events_for(kubectl, namespace, name)
            if event["reason"] == reason and event["type"] == "Warning"
        ]

    return wait_until(check, within=20, what=f"a Warning Event {reason} on {name}")[0]


def test_bad_cron_unknown_zone_and_oversized_args_stall_with_events(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str
):
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=scheduled_job_manifest("bad-cron", schedule="61 * * * *"),
    )
    kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=scheduled_job_manifest("bad-zone", timeZone="Mars/Olympus_Mons"),
    )
    big = {"blob": "x" * (70 * 1024)}
    kubectl(
        "create",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=scheduled_job_manifest("big-args", handler={"name": "tests.ok", "args": big}),
    )
    kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job_manifest("good"))

    cron = stalled(kubectl, namespace, "bad-cron", sundial_operator)
    assert cron["reason"] == "InvalidSchedule"
    assert "schedule" in cron["message"]
    assert "61" in warning(kubectl, namespace, "bad-cron", "InvalidSchedule")["message"]

    zone = stalled(kubectl, namespace, "bad-zone", sundial_operator)
    assert zone["reason"] == "UnknownTimeZone"
    assert "Mars/Olympus_Mons" in zone["message"]
    warning(kubectl, namespace, "bad-zone", "UnknownTimeZone")

    args = stalled(kubectl, namespace, "big-args", sundial_operator)
    assert args["reason"] == "InvalidSpec"
    assert "spec.handler.args" in args["message"] and "65536" in args["message"]
    warning(kubectl, namespace, "big-args", "InvalidSpec")

    for name in ("bad-cron", "bad-zone", "big-args"):
        body = get_json(kubectl, "-n", namespace, "sj", name)
        assert condition(body, "Ready")["status"] == "False"
        assert not (body["status"].get("nextScheduleTime"))

    good = wait_until(
        lambda: (lambda b: b if (condition(b, "Ready") or {}).get("status") == "True" else None)(
            get_json(kubectl, "-n", namespace, "sj", "good")
        ),
        within=30,
        what="the valid ScheduledJob Ready",
    )
    assert good["status"]["nextScheduleTime"]

    # Fixing the cron clears Stalled.
    kubectl("apply", "-n", namespace, "-f", "-", stdin=scheduled_job_manifest("bad-cron"))
    wait_until(
        lambda: (
            (condition(get_json(kubectl, "-n", namespace, "sj", "bad-cron"), "Ready") or {}).get(
                "status"
            )
            == "True"
        ),
        within=30,
        what="the fixed ScheduledJob Ready",
    )


@pytest.mark.usefixtures("sundial_crds_applied")
def test_handler_and_template_together_are_rejected_at_admission(kubectl: Any, namespace: str):
    manifest = json.loads(scheduled_job_manifest("both"))
    manifest["spec"]["template"] = {
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    }
    result = kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(manifest), check=False)
    assert result.returncode != 0
    assert "exactly one of handler or template must be set" in result.stderr
