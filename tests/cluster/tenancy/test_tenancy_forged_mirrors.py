"""A tenant cannot steer a neighbour's runs with a JobRun dressed as one of its mirrors.

One operator serves both namespaces. ``bob`` (``edit`` in team-b only, ``kubectl --as``) makes
JobRuns in team-b labelled as mirrors of team-a's ScheduledJob, with an ownerReference to it:
one named like the mirror of team-a's pending run and asking to cancel it, one named like a
JobRun of team-a's own. The operator makes a mirror only beside its ScheduledJob, so neither
changes anything; each is reported with a ``ForgedMirror`` Warning Event.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from support.operator import (
    OperatorProcess,
    apply,
    get_json,
    mirrored_runs,
    running,
    scheduled_job_manifest,
)
from support.polling import wait_until

pytestmark = pytest.mark.timeout(150)

#: So the garbage collector cannot take a forgery before the operator has seen it.
KEEP = "example.com/keep"


def _forged(name: str, owner: dict[str, Any], **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {
                "name": name,
                "labels": {"sundial.dev/mirror": "true", "sundial.dev/scheduledjob": "billing"},
                "finalizers": [KEEP],
                "ownerReferences": [
                    {
                        "apiVersion": "sundial.dev/v1alpha1",
                        "kind": "ScheduledJob",
                        "name": owner["metadata"]["name"],
                        "uid": owner["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {"jobRef": {"name": "billing"}, **spec},
        }
    )


def _reasons(kubectl: Any, namespace: str, reason: str) -> set[str]:
    listing = get_json(kubectl, "-n", namespace, "events", "--field-selector", f"reason={reason}")
    return {item["involvedObject"]["name"] for item in listing["items"]}


def test_forged_mirrors_in_another_namespace_neither_cancel_nor_delete(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    kubectl: Any,
    team_a: str,
    team_b: str,
    tmp_path: Path,
):
    both = ["--namespace", team_b]
    with running(OperatorProcess(operator_dsn, kubeconfig, team_a, tmp_path, extra_args=both)):
        # No runner serves this handler: its run stays pending, an active run to attack.
        apply(
            kubectl,
            team_a,
            scheduled_job_manifest("billing", handler={"name": "tests.served-by-nobody"}),
        )
        kubectl("annotate", "-n", team_a, "sj", "billing", "sundial.dev/run-now=1")
        mirror = wait_until(
            lambda: next(iter(mirrored_runs(kubectl, team_a, "billing")), None),
            within=60,
            what="the mirror of billing's run",
        )
        apply(
            kubectl,
            team_a,
            json.dumps(
                {
                    "apiVersion": "sundial.dev/v1alpha1",
                    "kind": "JobRun",
                    "metadata": {"name": "important"},
                    "spec": {"jobRef": {"name": "billing"}},
                }
            ),
        )
        owner = get_json(kubectl, "-n", team_a, "sj", "billing")
        mirror_name = mirror["metadata"]["name"]
        try:
            as_bob = ("--as", "bob")
            kubectl(
                *as_bob,
                "apply",
                "-n",
                team_b,
                "-f",
                "-",
                stdin=_forged(mirror_name, owner, cancel=True),
            )
            kubectl(*as_bob, "apply", "-n", team_b, "-f", "-", stdin=_forged("important", owner))

            # Mirror passes run every second: a few of them see the forgeries and do nothing.
            until = time.monotonic() + 6
            while time.monotonic() < until:
                body = get_json(kubectl, "-n", team_a, "jr", mirror_name)
                phase = (body.get("status") or {}).get("phase")
                assert phase != "Cancelled", "team-a's run was cancelled by a forgery"
                found = kubectl("get", "-n", team_a, "jr", "important", check=False)
                assert found.returncode == 0, "team-a's JobRun was deleted by a forgery"
                time.sleep(0.5)
            wait_until(
                lambda: _reasons(kubectl, team_b, "ForgedMirror") >= {mirror_name, "important"},
                within=30,
                what="a ForgedMirror Warning on each forgery",
            )
        finally:
            for name in (mirror_name, "important"):
                kubectl(
                    "patch",
                    "-n",
                    team_b,
                    "jr",
                    name,
                    "--type=merge",
                    "-p",
                    '{"metadata":{"finalizers":null}}',
                    check=False,
                )
