"""A dependency's open circuit breaker shows on the ScheduledJobs that name it.

A real ``sundial runner`` runs ``tests.downstream`` (tests/handlers/operator_jobs.py), whose
downstream is down while a file exists. Once the runner's breaker opens, the operator sets
Degraded=True, reason CircuitOpen, on the ScheduledJob whose ``spec.dependency`` names it, and
only there; once the downstream is back and a probe call succeeds, the condition clears.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.operator import (
    OperatorProcess,
    RunnerProcess,
    apply,
    condition,
    get_json,
    scheduled_job_manifest,
    wait_until,
)


def caller(down: Path) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "caller"},
            "spec": {
                # Every second, each failure final: the breaker sees its 10 calls in seconds.
                "schedule": "@every 1s",
                "handler": {"name": "tests.downstream", "args": {"down": str(down)}},
                "dependency": "test-downstream",
                "retry": {"maxRetries": 0},
            },
        }
    )


def test_degraded_circuit_open_appears_and_clears_when_the_dependency_recovers(
    sundial_operator: OperatorProcess,
    kubectl: Any,
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
) -> None:
    down = tmp_path / "test-downstream-is-down"
    down.touch()
    with RunnerProcess(operator_dsn, tmp_path) as runner:
        apply(kubectl, namespace, caller(down))
        apply(kubectl, namespace, scheduled_job_manifest("bystander", dependency="other-api"))

        def degraded(name: str, wanted: str) -> Any:
            def check() -> Any:
                sundial_operator.assert_alive()
                runner.assert_alive()
                found = condition(get_json(kubectl, "-n", namespace, "sj", name), "Degraded")
                return found if found and found["status"] == wanted else None

            return check

        opened = wait_until(degraded("caller", "True"), within=120, what="Degraded=True", every=1.0)
        assert opened["reason"] == "CircuitOpen"
        assert opened["message"].startswith(
            "the circuit breaker of dependency 'test-downstream' is open on 1 of 1 live runner:"
        ), opened["message"]
        bystander = condition(get_json(kubectl, "-n", namespace, "sj", "bystander"), "Degraded")
        assert bystander is not None and bystander["status"] == "False"

        down.unlink()  # the downstream recovers; the breaker's next probe succeeds
        cleared = wait_until(
            degraded("caller", "False"), within=120, what="Degraded=False", every=1.0
        )
        assert cleared["reason"] == "AsExpected"
