"""The chart's ValidatingAdmissionPolicy refuses a hostile Pod template at ``kubectl apply``.

The tenant ``bob`` (``edit`` in team-b, ``kubectl --as``) applies ScheduledJobs and JobRuns; the
policy is the chart's own, rendered by helm and applied to the real apiserver. The launcher's
check before the create stays (tests/cluster/tenancy/test_tenancy_pod_templates.py); this is
the same line drawn where the tenant sees it at once.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from support.chart import CHART, RENDER_FOR_THE_TEST_CLUSTER
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


SUNDIAL_POLICY = re.compile(r"ValidatingAdmissionPolicy '[a-z0-9-]+-sundial-pod-templates'")


def _refused_by_a_sundial_policy(stderr: str) -> bool:
    """Whether the chart's pod-template policy refused, under whichever release name.

    The apiserver drops a deleted policy from its admission chain a little later, so the copy a
    previous test applied may still be the one that answers; every copy is the same chart's.
    """
    return SUNDIAL_POLICY.search(stderr) is not None


@pytest.fixture
def policy(helm: Callable[..., Any], kubectl: Any, sundial_crds_applied: None) -> Iterator[str]:
    """The chart's policy and binding, applied for every namespace; removed afterwards."""
    release = f"t{uuid.uuid4().hex[:6]}"
    rendered = helm(
        "template",
        release,
        str(CHART),
        "--namespace",
        "sundial",
        "--api-versions",
        VAP,
        *RENDER_FOR_THE_TEST_CLUSTER,
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
    assert _refused_by_a_sundial_policy(first.stderr), first.stderr
    assert "hostNetwork, hostPID and hostIPC" in first.stderr
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


def _container(**security: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox:1.36", "securityContext": security}


#: Templates the launcher refuses under restricted, each for one reason. The policy must refuse
#: every one at apply: the early warning and the check before the create draw the same line.
REFUSED_UNDER_RESTRICTED = {
    "host-port": {
        "containers": [{**PLAIN["containers"][0], "ports": [{"containerPort": 80, "hostPort": 80}]}]
    },
    "unsafe-sysctl": {
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
        **PLAIN,
    },
    "unconfined-pod": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, **PLAIN},
    "unconfined-container": {"containers": [_container(seccompProfile={"type": "Unconfined"})]},
    "unmasked-proc": {"containers": [_container(procMount="Unmasked")]},
    "selinux-user": {"securityContext": {"seLinuxOptions": {"user": "system_u"}}, **PLAIN},
    "host-process": {"containers": [_container(windowsOptions={"hostProcess": True})]},
    "sys-admin": {"containers": [_container(capabilities={"add": ["SYS_ADMIN"]})]},
    "pod-root": {"securityContext": {"runAsUser": 0}, **PLAIN},
    "pod-may-be-root": {"securityContext": {"runAsNonRoot": False}, **PLAIN},
    "nfs-volume": {"volumes": [{"name": "data", "nfs": {"server": "nas", "path": "/"}}], **PLAIN},
    "init-root": {"initContainers": [_container(runAsUser=0)], **PLAIN},
    # Capabilities given without dropping ALL: Sundial's default (drop ALL) applies only when
    # the template says nothing about capabilities.
    "keeps-capabilities": {"containers": [_container(capabilities={"add": ["NET_BIND_SERVICE"]})]},
}
#: Templates both admit under restricted.
ADMITTED_UNDER_RESTRICTED = {
    "plain": PLAIN,
    "safe-sysctl": {
        "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
        **PLAIN,
    },
    "runtime-default": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, **PLAIN},
    "bind-low-ports": {
        "containers": [_container(capabilities={"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]})]
    },
    "config-volume": {"volumes": [{"name": "c", "configMap": {"name": "settings"}}], **PLAIN},
    "non-root-user": {"securityContext": {"runAsUser": 1000}, **PLAIN},
    "container-port": {
        "containers": [{**PLAIN["containers"][0], "ports": [{"containerPort": 80}]}]
    },
}


def _launcher_verdict(pod_spec: dict[str, Any]) -> list[str]:
    """What the launcher's own check finds in the Pod it would create from ``pod_spec``."""
    from sundial.pods import manifests, pod_security

    spec = manifests.LaunchSpec(
        run_id=1, attempt=1, job_id="j", job_namespace="team-b", job_name="probe", handler="",
        template={"spec": pod_spec}, args={}, idempotency_key="k", fire_time=None,
        timeout_seconds=60,
    )  # fmt: skip
    pod = manifests.pod_manifest(spec, manifests.ManifestSettings(service_account_name="job"))
    return pod_security.violations(
        pod["spec"], pod_security.Level.RESTRICTED, installation_service_account="job"
    )


def test_the_policy_and_the_launcher_refuse_the_same_templates(
    policy: str, kubectl: Any, team_b: str
) -> None:
    def apply(name: str, pod_spec: dict[str, Any]) -> Any:
        return kubectl(
            "--as", "bob", "apply", "-n", team_b, "-f", "-",
            stdin=_scheduled_job(name, pod_spec), check=False,
        )  # fmt: skip

    def in_force() -> Any:
        result = apply("probe", HOST)
        if result.returncode == 0:
            kubectl("delete", "-n", team_b, "sj", "probe", "--wait=false")
            return None
        return result

    wait_until(in_force, within=60, what="the policy to refuse a hostPID template")
    for name, pod_spec in REFUSED_UNDER_RESTRICTED.items():
        assert _launcher_verdict(pod_spec), f"{name}: the launcher admits it"
        result = apply(name, pod_spec)
        assert result.returncode != 0, f"{name}: the policy admits it"
        assert _refused_by_a_sundial_policy(result.stderr), result.stderr
        assert f"namespace {team_b}" in result.stderr, result.stderr
    for name, pod_spec in ADMITTED_UNDER_RESTRICTED.items():
        assert _launcher_verdict(pod_spec) == [], name
        result = apply(name, pod_spec)
        assert result.returncode == 0, f"{name}: {result.stderr}"
