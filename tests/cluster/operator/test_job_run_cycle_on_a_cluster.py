"""A dependsOn cycle on a real cluster: both JobRuns Stalled with Warning Events, the cycle
broken by editing dependsOn (admitted until the run is submitted, refused after)."""

from __future__ import annotations

import json
from typing import Any

from support.operator import OperatorProcess, StoreWorker, get_json
from support.polling import wait_until


def job_run(name: str, depends_on: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": name},
        "spec": {"job": {"handler": {"name": "tests.ok"}}, "dependsOn": depends_on},
    }


def condition(body: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in (body.get("status") or {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


def test_a_cycle_stalls_both_and_an_edit_breaks_it(
    sundial_operator: OperatorProcess, kubectl: Any, namespace: str, operator_dsn: str
) -> None:
    objects = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [job_run("cycle-a", ["cycle-b"]), job_run("cycle-b", ["cycle-a"])],
    }
    kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(objects))

    def stalled(name: str) -> dict[str, Any] | None:
        sundial_operator.assert_alive()
        found = condition(get_json(kubectl, "-n", namespace, "jr", name), "Stalled")
        return found if found.get("status") == "True" else None

    for name, other in (("cycle-a", "cycle-b"), ("cycle-b", "cycle-a")):
        found = wait_until(lambda n=name: stalled(n), within=30, what=f"{name} Stalled")
        assert found["reason"] == "DependencyCycle"
        assert found["message"] == (
            f"spec.dependsOn: dependsOn forms a cycle: {name} -> {other} -> {name}; remove one edge"
        )
    events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    warned = {e["involvedObject"]["name"] for e in events if e["reason"] == "DependencyCycle"}
    assert warned == {"cycle-a", "cycle-b"}

    with StoreWorker(operator_dsn):
        kubectl(
            "patch",
            "-n",
            namespace,
            "jr",
            "cycle-a",
            "--type=merge",
            "-p",
            '{"spec":{"dependsOn":null}}',
        )

        def succeeded() -> bool:
            sundial_operator.assert_alive()
            return all(
                (get_json(kubectl, "-n", namespace, "jr", n).get("status") or {}).get("phase")
                == "Succeeded"
                for n in ("cycle-a", "cycle-b")
            )

        wait_until(succeeded, within=60, what="both JobRuns to succeed after the edit")
    assert (
        condition(get_json(kubectl, "-n", namespace, "jr", "cycle-b"), "Stalled")["status"]
        == "False"
    )

    refused = kubectl(
        "patch",
        "-n",
        namespace,
        "jr",
        "cycle-b",
        "--type=merge",
        "-p",
        '{"spec":{"dependsOn":[]}}',
        check=False,
    )
    assert refused.returncode != 0
    assert "dependsOn cannot change once the run is submitted" in refused.stderr
