"""What a job Pod may ask for: Pod Security levels checked by Sundial itself (pure).

The operator creates job Pods with its own ServiceAccount, so a template would otherwise get
whatever the operator may create: a tenant who can write a ScheduledJob but not a Pod, or a
namespace that Pod Security admission does not guard, would obtain a privileged Pod through
Sundial (a confused deputy). So before a Pod is created, the final manifest (the template with
Sundial's restricted defaults filled in) is held to the namespace's level:

* ``restricted`` (the default): Kubernetes' Pod Security Standard of that name.
* ``baseline``: Kubernetes' baseline standard (no host namespaces, host paths or ports, no
  privileged containers or added capabilities beyond the baseline set).
* ``privileged``: nothing is checked.

A platform team sets the level with the namespace label ``sundial.dev/pod-security`` (a tenant
with ``edit`` cannot label its namespace). The ServiceAccount is checked as well: a template
may name only a ServiceAccount listed in the namespace's annotation
``sundial.dev/service-accounts`` (comma-separated), so a Pod cannot borrow a token the tenant
was never given. Each violation is a sentence that says what to change.

The checks follow the Pod Security Standards (kubernetes.io/docs/concepts/security/
pod-security-standards) for the fields a Pod template can set; the namespace's own Pod Security
admission, where labelled, still applies on top.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "LEVEL_LABEL",
    "SERVICE_ACCOUNTS_ANNOTATION",
    "Level",
    "allowed_service_accounts",
    "describe",
    "level_of",
    "violations",
]

LEVEL_LABEL: Final = "sundial.dev/pod-security"
SERVICE_ACCOUNTS_ANNOTATION: Final = "sundial.dev/service-accounts"


class Level(enum.StrEnum):
    RESTRICTED = "restricted"
    BASELINE = "baseline"
    PRIVILEGED = "privileged"


#: Capabilities the baseline level lets a container add (the Pod Security Standards' list).
_BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
_RESTRICTED_VOLUMES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
_SAFE_SYSCTLS: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
_SELINUX_TYPES: Final = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})


def level_of(namespace: Mapping[str, Any] | None) -> tuple[Level, str | None]:
    """The level a namespace (its object) holds job Pods to, and a problem with its label (an
    unknown value counts as ``restricted``, never as less)."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(LEVEL_LABEL)
    if value is None:
        return Level.RESTRICTED, None
    try:
        return Level(value), None
    except ValueError:
        return Level.RESTRICTED, (
            f"the namespace label {LEVEL_LABEL}={value!r} is not one of restricted, baseline,"
            " privileged; restricted applies"
        )


def allowed_service_accounts(namespace: Mapping[str, Any] | None) -> frozenset[str]:
    annotations = ((namespace or {}).get("metadata") or {}).get("annotations") or {}
    listed = str(annotations.get(SERVICE_ACCOUNTS_ANNOTATION) or "")
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


def violations(
    pod_spec: Mapping[str, Any],
    level: Level,
    *,
    installation_service_account: str | None,
    allowed_accounts: frozenset[str] = frozenset(),
) -> list[str]:
    """What in ``pod_spec`` (a Pod's spec as it would be created) breaks ``level`` or names a
    ServiceAccount that is not allowed; empty when the Pod may be created."""
    found = list(_service_account(pod_spec, installation_service_account, allowed_accounts))
    if level is Level.PRIVILEGED:
        return found
    found += _baseline(pod_spec)
    if level is Level.RESTRICTED:
        found += _restricted(pod_spec)
    return found


def _service_account(
    pod_spec: Mapping[str, Any], installation: str | None, allowed: frozenset[str]
) -> Iterator[str]:
    name = pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount")
    if name and name != installation and name not in allowed:
        yield (
            f"serviceAccountName {name!r} is not allowed for job Pods in this namespace: leave it"
            f" out, or have a platform admin list it in the namespace annotation"
            f" {SERVICE_ACCOUNTS_ANNOTATION}"
        )


def _containers(pod_spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in pod_spec.get(key) or ():
            yield f"{key}[{container.get('name', '?')}]", container


def _baseline(pod_spec: Mapping[str, Any]) -> Iterator[str]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(field):
            yield f"{field}: true is not allowed (remove it)"
    for volume in pod_spec.get("volumes") or ():
        if "hostPath" in volume:
            yield f"volume {volume.get('name', '?')!r} is a hostPath: use emptyDir or a PVC"
    security = pod_spec.get("securityContext") or {}
    yield from _selinux("securityContext", security)
    yield from _seccomp_not_unconfined("securityContext", security)
    for sysctl in security.get("sysctls") or ():
        if sysctl.get("name") not in _SAFE_SYSCTLS:
            yield f"sysctl {sysctl.get('name')!r} is not a safe sysctl (remove it)"
    for where, container in _containers(pod_spec):
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            yield f"{where}: privileged: true is not allowed (remove it)"
        added = set((context.get("capabilities") or {}).get("add") or ()) - _BASELINE_CAPABILITIES
        if added:
            yield f"{where}: capabilities {sorted(added)} may not be added"
        for port in container.get("ports") or ():
            if port.get("hostPort"):
                yield f"{where}: hostPort {port['hostPort']} is not allowed (remove it)"
        if context.get("procMount") not in (None, "Default"):
            yield f"{where}: procMount must be Default"
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            yield f"{where}: windowsOptions.hostProcess is not allowed"
        yield from _selinux(f"{where}.securityContext", context)
        yield from _seccomp_not_unconfined(f"{where}.securityContext", context)


def _selinux(where: str, context: Mapping[str, Any]) -> Iterator[str]:
    options = context.get("seLinuxOptions") or {}
    if options.get("type", "") not in _SELINUX_TYPES or options.get("user") or options.get("role"):
        yield f"{where}.seLinuxOptions may set only a container type (container_t)"


def _seccomp_not_unconfined(where: str, context: Mapping[str, Any]) -> Iterator[str]:
    if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield f"{where}.seccompProfile Unconfined is not allowed (use RuntimeDefault)"


def _restricted(pod_spec: Mapping[str, Any]) -> Iterator[str]:
    for volume in pod_spec.get("volumes") or ():
        kinds = set(volume) - {"name"}
        if kinds and not kinds <= _RESTRICTED_VOLUMES and "hostPath" not in kinds:
            yield (
                f"volume {volume.get('name', '?')!r} of type {sorted(kinds)} is not allowed"
                f" under restricted (allowed: {', '.join(sorted(_RESTRICTED_VOLUMES))})"
            )
    pod = pod_spec.get("securityContext") or {}
    for where, container in _containers(pod_spec):
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            yield f"{where}: allowPrivilegeEscalation must be false"
        non_root = context.get("runAsNonRoot", pod.get("runAsNonRoot"))
        if non_root is not True:
            yield f"{where}: runAsNonRoot must be true"
        user = context.get("runAsUser", pod.get("runAsUser"))
        if user == 0:
            yield f"{where}: runAsUser 0 (root) is not allowed"
        profile = (context.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if profile not in ("RuntimeDefault", "Localhost"):
            yield f"{where}: seccompProfile must be RuntimeDefault or Localhost"
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            yield f"{where}: capabilities must drop ALL"
        extra = set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}
        if extra:
            yield f"{where}: restricted adds only NET_BIND_SERVICE, not {sorted(extra)}"


def describe(found: Sequence[str], level: Level, namespace: str) -> str:
    """One message for a refused Pod: what is wrong, and who can change the level."""
    return (
        f"the Pod template breaks Pod Security {level} for job Pods in namespace {namespace}: "
        + "; ".join(found)
        + f". Change the template, or have a platform admin label the namespace"
        f" {LEVEL_LABEL}=baseline or privileged."
    )
