"""Job Pods held to the namespace's Pod Security level by Sundial itself (``pod_security``)."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.pods import manifests, pod_security
from sundial.pods.pod_security import Level


def _final_spec(template_spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as the launcher would create it: the template with Sundial's defaults."""
    spec = manifests.LaunchSpec(
        run_id=7,
        attempt=1,
        job_id="00000000-0000-0000-0000-000000000001",
        job_namespace="team-b",
        job_name="report",
        handler="",
        template={"spec": template_spec},
        args={},
        idempotency_key="run:7",
        fire_time=None,
        timeout_seconds=60,
    )
    settings = manifests.ManifestSettings(service_account_name="sundial-job")
    spec_out: dict[str, Any] = manifests.pod_manifest(spec, settings)["spec"]
    return spec_out


def _container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox", **fields}


def _check(template_spec: dict[str, Any], level: Level, **kwargs: Any) -> list[str]:
    return pod_security.violations(
        _final_spec(template_spec), level, installation_service_account="sundial-job", **kwargs
    )


def test_a_plain_template_passes_restricted_with_the_defaults_filled_in() -> None:
    assert _check({"containers": [_container()]}, Level.RESTRICTED) == []


HOSTILE = {
    "hostNetwork": True,
    "hostPID": True,
    "serviceAccountName": "cluster-admin-bot",
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    "containers": [_container(securityContext={"privileged": True, "runAsUser": 0})],
}


@pytest.mark.parametrize("level", [Level.RESTRICTED, Level.BASELINE])
def test_the_confused_deputy_template_is_refused_with_each_reason(level: Level) -> None:
    found = "\n".join(_check(HOSTILE, level))
    for words in (
        "hostNetwork",
        "hostPID",
        "'root' is a hostPath",
        "privileged: true",
        "serviceAccountName 'cluster-admin-bot' is not allowed",
    ):
        assert words in found, (words, found)


def test_restricted_asks_more_than_baseline() -> None:
    root = {"containers": [_container(securityContext={"runAsUser": 0, "runAsNonRoot": False})]}
    assert _check(root, Level.BASELINE) == []
    found = _check(root, Level.RESTRICTED)
    assert any("runAsNonRoot must be true" in f for f in found)
    assert any("runAsUser 0" in f for f in found)
    caps = {"containers": [_container(securityContext={"capabilities": {"add": ["CHOWN"]}})]}
    assert _check(caps, Level.BASELINE) == []
    assert any("drop ALL" in f for f in _check(caps, Level.RESTRICTED))
    nfs = {
        "volumes": [{"name": "data", "nfs": {"server": "x", "path": "/"}}],
        "containers": [_container()],
    }
    assert _check(nfs, Level.BASELINE) == []
    assert any("'data' of type ['nfs']" in f for f in _check(nfs, Level.RESTRICTED))


def test_privileged_checks_only_the_service_account() -> None:
    assert _check(HOSTILE, Level.PRIVILEGED) == [
        "serviceAccountName 'cluster-admin-bot' is not allowed for job Pods in this namespace:"
        " leave it out, or have a platform admin list it in the namespace annotation"
        " sundial.dev/service-accounts"
    ]
    assert (
        _check(HOSTILE, Level.PRIVILEGED, allowed_accounts=frozenset({"cluster-admin-bot"})) == []
    )


def test_the_level_comes_from_the_namespace_label_and_never_drops_on_a_typo() -> None:
    def namespace(**labels: str) -> dict[str, Any]:
        return {"metadata": {"labels": labels}}

    assert pod_security.level_of(None) == (Level.RESTRICTED, None)
    assert pod_security.level_of(namespace()) == (Level.RESTRICTED, None)
    labelled = namespace(**{pod_security.LEVEL_LABEL: "baseline"})
    assert pod_security.level_of(labelled) == (Level.BASELINE, None)
    level, problem = pod_security.level_of(namespace(**{pod_security.LEVEL_LABEL: "Privileged!"}))
    assert level is Level.RESTRICTED and problem is not None and "restricted applies" in problem


def test_allowed_service_accounts_come_from_the_namespace_annotation() -> None:
    body = {"metadata": {"annotations": {pod_security.SERVICE_ACCOUNTS_ANNOTATION: " a, b ,,"}}}
    assert pod_security.allowed_service_accounts(body) == frozenset({"a", "b"})
    assert pod_security.allowed_service_accounts(None) == frozenset()


def test_the_message_says_what_to_change_and_who_can_lower_the_level() -> None:
    message = pod_security.describe(
        ["hostPID: true is not allowed (remove it)"], Level.RESTRICTED, "team-b"
    )
    assert "Pod Security restricted" in message and "namespace team-b" in message
    assert "hostPID" in message and "sundial.dev/pod-security=baseline" in message
