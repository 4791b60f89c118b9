"""The operator does its whole lifecycle with only the chart's RBAC.

The chart is installed (its RBAC for an operator watching the test's namespace; no operator
Pod, as kwok would not run it), a token of the chart's operator ServiceAccount becomes a
kubeconfig, and the real operator process runs with nothing else. Each step waits on what
the step does in the API, so a verb the chart lacks makes that step time out; the operator's
log must not show a single Forbidden answer either.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from support.operator import (
    REPOSITORY,
    OperatorProcess,
    RunnerProcess,
    apply,
    condition,
    get_json,
    mirrored_runs,
    pod_job_run,
    scheduled_job_manifest,
)
from support.polling import wait_until

pytestmark = [
    pytest.mark.usefixtures("kwok_nodes", "sundial_crds_applied"),
    pytest.mark.timeout(400),
]

CHART = REPOSITORY / "charts" / "sundial"
FINALIZER = "sundial.dev/finalizer"


@pytest.fixture
def operator_kubeconfig(
    helm: Callable[..., Any],
    kubectl: Callable[..., Any],
    kubeconfig: Path,
    core_api: client.CoreV1Api,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Path]:
    """A kubeconfig holding only a token of the chart's operator ServiceAccount."""
    release_namespace = f"t-sys-{uuid.uuid4().hex[:8]}"
    core_api.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=release_namespace))
    )
    release = f"rbac-{uuid.uuid4().hex[:6]}"
    values = {
        "crds": {"enabled": False},
        "watchNamespaces": [namespace],
        "operator": {"replicas": 0},
        "historyApi": {"replicas": 0},
        "runner": {"enabled": False},
        "migrations": {"enabled": False},
        "rbac": {"aggregateToDefaultRoles": False},
    }
    (tmp_path / "rbac-values.yaml").write_text(yaml.safe_dump(values))
    base = ["--kubeconfig", str(kubeconfig), "--namespace", release_namespace]
    helm("install", release, str(CHART), *base, "--values", str(tmp_path / "rbac-values.yaml"))
    try:
        account = f"{release}-sundial-operator"
        token = kubectl(
            "create", "token", account, "-n", release_namespace, "--duration=2h"
        ).stdout.strip()
        admin = yaml.safe_load(kubeconfig.read_text())
        [cluster_entry] = admin["clusters"]
        restricted = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster_entry["cluster"]}],
            "users": [{"name": account, "user": {"token": token}}],
            "contexts": [{"name": "operator", "context": {"cluster": "local", "user": account}}],
            "current-context": "operator",
        }
        path = tmp_path / "operator-kubeconfig.yaml"
        path.write_text(yaml.safe_dump(restricted))
        who = kubectl("--kubeconfig", str(path), "auth", "whoami", "-o", "json").stdout
        assert json.loads(who)["status"]["userInfo"]["username"] == (
            f"system:serviceaccount:{release_namespace}:{account}"
        )
        yield path
    finally:
        helm("uninstall", release, *base, "--wait", check=False)
        core_api.delete_namespace(release_namespace)


#: How a refused request shows in the operator's log: the apiserver's answer, or kopf's
#: warning when it may not list or watch CRDs or namespaces.
REFUSALS = ("forbidden", " 403", "not enough permissions")


def _forbidden(operator: OperatorProcess) -> list[str]:
    return [
        line
        for line in operator.logs().splitlines()
        if any(refusal in line.lower() for refusal in REFUSALS)
    ]


def test_the_operator_runs_every_step_with_only_the_charts_service_account(
    operator_kubeconfig: Path,
    kubectl: Callable[..., Any],
    namespace: str,
    operator_dsn: str,
    tmp_path: Path,
) -> None:
    operator = OperatorProcess(
        operator_dsn, operator_kubeconfig, namespace, tmp_path,
        extra_args=["--pod-instance", namespace, "--pod-gc-seconds", "1",
                    "--pod-service-account", "sundial-job"],
    )  # fmt: skip
    operator.start()
    try:
        with RunnerProcess(operator_dsn, tmp_path):
            _lifecycle(operator, kubectl, namespace)
    finally:
        operator.stop()
    assert _forbidden(operator) == []


def _lifecycle(operator: OperatorProcess, kubectl: Callable[..., Any], namespace: str) -> None:
    def sj() -> Any:
        operator.assert_alive()
        return get_json(kubectl, "-n", namespace, "sj", "nightly")

    def jr(name: str) -> Any:
        operator.assert_alive()
        return get_json(kubectl, "-n", namespace, "jr", name)

    # A ScheduledJob: finalizer (patch), status (scheduledjobs/status), run-now removed (patch).
    manifest = json.loads(scheduled_job_manifest("nightly", schedule="0 0 1 1 *"))
    manifest["metadata"]["annotations"] = {"sundial.dev/run-now": "1"}
    apply(kubectl, namespace, json.dumps(manifest))
    wait_until(lambda: FINALIZER in (sj()["metadata"].get("finalizers") or ()), within=30,
               what="the finalizer on the ScheduledJob")  # fmt: skip
    wait_until(lambda: (condition(sj(), "Ready") or {}).get("status") == "True", within=30,
               what="Ready=True on the ScheduledJob")  # fmt: skip
    # The run-now run, mirrored as a JobRun (jobruns create, jobruns/status) that succeeds.
    wait_until(
        lambda: any(
            (run.get("status") or {}).get("phase") == "Succeeded"
            for run in mirrored_runs(kubectl, namespace, "nightly")
        ),
        within=60,
        what="the run-now run mirrored and Succeeded",
    )
    wait_until(lambda: "sundial.dev/run-now" not in (sj()["metadata"].get("annotations") or {}),
               within=30, what="the run-now annotation removed")  # fmt: skip
    # Events (events create).
    wait_until(
        lambda: any(
            e["reason"] == "SuccessfulCreate"
            for e in get_json(kubectl, "-n", namespace, "events", "--field-selector",
                              "involvedObject.name=nightly")["items"]
        ),
        within=30,
        what="a SuccessfulCreate Event on the ScheduledJob",
    )  # fmt: skip

    # A user JobRun with jobRef (scheduledjobs get), followed to Complete.
    apply(kubectl, namespace, json.dumps({
        "apiVersion": "sundial.dev/v1alpha1", "kind": "JobRun",
        "metadata": {"name": "by-hand"}, "spec": {"jobRef": {"name": "nightly"}},
    }))  # fmt: skip
    wait_until(lambda: (condition(jr("by-hand"), "Complete") or {}).get("status") == "True",
               within=60, what="Complete=True on the jobRef JobRun")  # fmt: skip

    # A pod job: Pods create, get, list (kwok ends it).
    apply(kubectl, namespace, pod_job_run("in-a-pod", "succeed"))
    wait_until(lambda: (jr("in-a-pod").get("status") or {}).get("phase") == "Succeeded",
               within=60, what="the pod JobRun Succeeded")  # fmt: skip
    pod_name = jr("in-a-pod")["status"]["podName"]
    pod = get_json(kubectl, "-n", namespace, "pod", pod_name)
    assert pod["spec"]["serviceAccountName"] == "sundial-job"
    assert pod["spec"]["automountServiceAccountToken"] is False

    # Cancelling a running pod job deletes its Pod (pods delete).
    apply(kubectl, namespace, pod_job_run("forever", "run-forever"))

    # The claim makes the run Running; the Pod's name is recorded once the Pod exists, which
    # a mirror pass may see a moment later.
    def running_pod_name() -> str | None:
        status = jr("forever").get("status") or {}
        return status.get("podName") if status.get("phase") == "Running" else None

    long_pod = wait_until(running_pod_name, within=60,
                          what="the long pod JobRun Running with its Pod's name")  # fmt: skip
    kubectl("-n", namespace, "patch", "jr", "forever", "--type=merge", "-p",
            '{"spec":{"cancel":true}}')  # fmt: skip
    wait_until(lambda: (jr("forever").get("status") or {}).get("phase") == "Cancelled",
               within=60, what="the long pod JobRun Cancelled")  # fmt: skip
    wait_until(
        lambda: not get_json(kubectl, "-n", namespace, "pods", "--field-selector",
                             f"metadata.name={long_pod}")["items"],
        within=60, what="the cancelled run's Pod deleted",
    )  # fmt: skip

    # Deleting a user JobRun and the ScheduledJob: the finalizers are removed (patch).
    kubectl("-n", namespace, "delete", "jr", "by-hand", "--timeout=60s")
    kubectl("-n", namespace, "delete", "sj", "nightly", "--timeout=60s")
    operator.assert_alive()
