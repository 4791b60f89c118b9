"""The chart's ValidatingAdmissionPolicy refuses a hostile Pod template at ``kubectl apply``.

The tenant ``bob`` (``edit`` in team-b, ``kubectl --as``) applies ScheduledJobs and JobRuns; the
policy is the chart's own, rendered by helm and applied to the real apiserver. The launcher's
check before the create stays (tests/cluster/tenancy/test_tenancy_pod_templates.py); this is
the same line drawn where the tenant sees it at once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from support.chart import CHART
from support.polling import wait_until

pytestmark = pytest.mark.timeout(120)

VAP = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"


def _scheduled_job(name: str, pod_spec: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": name},
            "spec": {"schedule": "0 0 1 1 *", "template": {"spec": pod_spec}},
        }
    )


def _job_run(name: str, pod_spec: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": name},
            "spec": {"job": {"template": {"spec": pod_spec}}},
        }
    )


PLAIN = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
HOST = {
    "hostPID": True,
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    "containers": [{"name": "main", "image": "busybox:1.36"}],
}
PRIVILEGED = {
    "containers": [
        {"name": "main", "image": "busybox:1.36", "securityContext": {"privileged": True}}
    ]
}
ROOT = {
    "containers": [{"name": "main", "image": "busybox:1.36", "securityContext": {"runAsUser": 0}}]
}
OTHER_ACCOUNT = {"serviceAccountName": "cluster-admin-bot", **PLAIN}


@pytest.fixture
def policy(helm: Callable[..., Any], kubectl: Any, sundial_crds_applied: None) -> Iterator[str]:
    """The chart's policy and binding, applied for every namespace; removed afterwards."""
    release = f"t{uuid.uuid4().hex[:6]}"
    rendered = helm(
        "template", release, str(CHART), "--namespace", "sundial", "--api-versions", VAP
    )
    objects = [
        document
        for document in yaml.safe_load_all(rendered.stdout)
        if document and document["kind"].startswith("ValidatingAdmissionPolicy")
    ]
    assert [o["kind"] for o in objects] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    manifest = yaml.safe_dump_all(objects)
    kubectl("apply", "-f", "-", stdin=manifest)
    try:
        yield objects[0]["metadata"]["name"]
    finally:
        kubectl("delete", "-f", "-", stdin=manifest, check=False)


def test_bob_cannot_apply_a_template_beyond_his_namespaces_level(
    policy: str, kubectl: Any, team_b: str
) -> None:
    def apply(manifest: str) -> Any:
        return kubectl("--as", "bob", "apply", "-n", team_b, "-f", "-", stdin=manifest, check=False)

    # The policy takes a moment to reach the apiserver's admission chain.
    def refused() -> Any:
        result = apply(_scheduled_job("probe", HOST))
        if result.returncode == 0:
            kubectl("delete", "-n", team_b, "sj", "probe", "--wait=false")
            return None
        return result

    first = wait_until(refused, within=60, what="the policy to refuse a hostPID template")
    assert policy in first.stderr and "hostNetwork, hostPID and hostIPC" in first.stderr
    for manifest, words in [
        (_scheduled_job("priv", PRIVILEGED), "privileged containers are not allowed"),
        (_job_run("root", ROOT), "may not run as root"),
        (_job_run("borrow", OTHER_ACCOUNT), "cluster-admin-bot is not allowed"),
    ]:
        result = apply(manifest)
        assert result.returncode != 0 and words in result.stderr, result.stderr
        assert f"namespace {team_b}" in result.stderr
    assert apply(_scheduled_job("fine", PLAIN)).returncode == 0
    assert apply(_job_run("fine", PLAIN)).returncode == 0

    # Only a platform admin lowers the level: bob cannot label his namespace.
    label = ("label", "namespace", team_b, "sundial.dev/pod-security=baseline")
    assert kubectl("--as", "bob", *label, check=False).returncode != 0
    kubectl(*label)
    wait_until(
        lambda: apply(_job_run("root", ROOT)).returncode == 0,
        within=30,
        what="baseline to let a root container through",
    )
    result = apply(_scheduled_job("priv", PRIVILEGED))
    assert result.returncode != 0 and "under Pod Security baseline" in result.stderr
