"""An upgrade from the previous release, with work in flight: the session installs the previous
release's chart and images (``sundial.localdev.previous_release``), starts a Pod job that
sleeps through the upgrade and a ScheduledJob that fires every few seconds on the runner, then
``helm upgrade``s to this checkout's chart and images, as a platform team would. Every other
story then runs on the upgraded installation; ``test_user_stories`` checks this one's outcome.

What the upgrade must keep: the Pod job ends once, Succeeded, under its first attempt (the new
operator adopts its Pod); the schedule goes on firing and succeeding after the upgrade; none of
its runs fails. The migrate hook applies this release's migrations while the previous
release's runners still serve (Helm runs it before the Deployments change).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from waiting import until

#: Namespace of the upgrade's work (the installation watches it beside the stories').
UPGRADE = "e2e-upgrade"
#: A Pod job that sleeps through the upgrade.
POD_RUN = "sleeps-through-the-upgrade"
POD_SECONDS = 75
#: A ScheduledJob on the runner that fires every few seconds through the upgrade.
EVERY = "fires-through-the-upgrade"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@dataclass
class UpgradeStory:
    """What the session fixture did, for the test that checks the outcome."""

    previous: str  # the commit installed first
    started_at: datetime  # the upgrade began (helm upgrade ran)
    upgraded_at: datetime  # helm upgrade returned, every component rolled out again
    #: The operator Pods before and after: the upgrade must have replaced them.
    operators_before: frozenset[str]
    operators_after: frozenset[str]


def workload(busybox_image: str, placement: dict[str, Any], pull_policy: str) -> str:
    """The manifests applied before the upgrade (YAML, for ``kubectl apply``)."""
    pod_job = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": POD_RUN},
        "spec": {
            "job": {
                "retry": {"maxRetries": 0},
                "template": {
                    "spec": {
                        "automountServiceAccountToken": False,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "main",
                                "image": busybox_image,
                                "imagePullPolicy": pull_policy,
                                "command": ["sleep", str(POD_SECONDS)],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                            }
                        ],
                        **placement,
                    }
                },
            }
        },
    }
    every = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": EVERY},
        "spec": {
            "schedule": "@every 4s",
            "handler": {"name": "examples.extract", "args": {"table": "orders"}},
            "retry": {"maxRetries": 0},
        },
    }
    return yaml.safe_dump_all([pod_job, every], sort_keys=False)


def _json(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def start(kubectl: Kubectl, manifest: str) -> None:
    """Apply the work and wait until it is in flight: the Pod job's Pod running, a fire of
    the schedule succeeded on the previous release."""
    kubectl("apply", "--server-side", "-n", UPGRADE, "-f", "-", stdin=manifest)

    def pod_running() -> bool:
        status = _json(kubectl, "get", "jobrun", POD_RUN, "-n", UPGRADE).get("status") or {}
        if status.get("runId") is None:
            return False
        pods = _json(
            kubectl, "get", "pods", "-n", UPGRADE, "-l", f"sundial.dev/run-id={status['runId']}"
        )["items"]
        return any(pod["status"].get("phase") == "Running" for pod in pods)

    until(pod_running, within=120, what="the Pod job's Pod to run on the previous release")
    until(
        lambda: (
            _json(kubectl, "get", "scheduledjob", EVERY, "-n", UPGRADE).get("status") or {}
        ).get("lastSuccessfulTime"),
        within=90,
        what="a fire to succeed on the previous release",
    )


def operator_pods(kubectl: Kubectl, namespace: str) -> frozenset[str]:
    listed = _json(
        kubectl, "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=operator"
    )
    return frozenset(pod["metadata"]["uid"] for pod in listed["items"])


def now() -> datetime:
    return datetime.now(UTC)
