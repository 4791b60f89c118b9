"""The Pod of one attempt of a pod-mode run, built from the job's template (pure).

Guarantees:

* **Deterministic name.** The same (installation, job, run, attempt) always gives the same
  DNS-1123 name of at most 63 characters, so creating it twice is a 409, never a second Pod
  for one attempt. The job name is kept as a readable prefix; a hash of the run makes it unique.
* **Labels** ``sundial.dev/job``, ``sundial.dev/run-id``, ``sundial.dev/attempt`` and
  ``sundial.dev/instance`` (which Sundial installation owns the Pod) are always set, so the
  launcher finds its Pods by label, and a restarted launcher can adopt or delete them.
* **Restricted by default** (docs/design.md): where the template leaves them unset, the
  Pod runs as non-root with seccomp RuntimeDefault, no privilege escalation, all capabilities
  dropped, a read-only root filesystem, and no service-account token. A template that sets one
  of these explicitly keeps its value here; the launcher then holds the whole Pod to the
  namespace's level (``pod_security``: restricted unless a platform admin labels the namespace)
  before creating it, and the namespace's own Pod Security admission applies on top.
* **No database credential** is ever added. Variables named ``SUNDIAL_*`` are reserved: the
  template's own are replaced by the run's (a template cannot forge a fencing token), and
  ``SUNDIAL_DSN`` is never set. Other variables of the template are the user's and kept.
* ``restartPolicy: Never`` (one attempt is one Pod; retries are new Pods with a new attempt)
  and ``activeDeadlineSeconds`` from the run's timeout.
* **Tracked until its outcome is recorded**: the finalizer ``sundial.dev/pod-outcome`` and the
  label ``sundial.dev/tracked=true``, so a Pod that is evicted or deleted cannot disappear
  before the launcher has read how it ended (docs/adr/0023-pod-outcome-finalizer.md). The
  launcher removes both once the attempt's outcome is committed.
* **Placed by the installation** where the template does not say: ``ManifestSettings.placement``
  (nodeSelector, tolerations, affinity) is merged under the template's own
  (``pods/placement.py``), so handler jobs, which have no template, reach a tainted pool too.
* ``terminationGracePeriodSeconds``: the template's when it sets one, else
  ``ManifestSettings.termination_grace_seconds`` (10 s): how long a container may take to stop
  once its deadline passed or its Pod is deleted, so a timed-out container is gone within the
  timeout plus this grace.
* **More memory after OOM kills**, when asked: after n OOMKilled attempts of the run, every
  container's memory request and limit is multiplied by ``factor ** n`` and capped. The job's
  ``oom.memoryIncreasePercent`` / ``oom.maxMemory`` decide when set (``memory_bump``); the
  installation's ``oom_memory_factor`` / ``oom_memory_cap_bytes`` are the defaults.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sundial.api import validate
from sundial.api.labels import (
    LABEL_ATTEMPT,
    LABEL_INSTANCE,
    LABEL_JOB,
    LABEL_RUN_ID,
    LABEL_TRACKED,
)
from sundial.pods import placement as placements

__all__ = [
    "ANNOTATION_FIRE_TIME",
    "ANNOTATION_LAUNCH_ID",
    "LABEL_ATTEMPT",
    "LABEL_INSTANCE",
    "LABEL_JOB",
    "LABEL_RUN_ID",
    "LABEL_TRACKED",
    "MAX_NAME_LENGTH",
    "OUTCOME_FINALIZER",
    "RESERVED_ENV_PREFIX",
    "LaunchSpec",
    "ManifestSettings",
    "bump_memory",
    "environment",
    "memory_bump",
    "pod_manifest",
    "pod_name",
]

#: Holds the Pod object until its attempt's outcome is committed in PostgreSQL.
OUTCOME_FINALIZER = "sundial.dev/pod-outcome"
#: Kubernetes' default is 30 s; a job that needs longer to clean up sets its own in the template.
DEFAULT_TERMINATION_GRACE_SECONDS = 10
ANNOTATION_FIRE_TIME = "sundial.dev/fire-time"
#: A random id the launcher gives each Pod it creates and keeps in memory: a create whose
#: answer was lost, met again as a 409, is recognised as its own by it; a Pod someone else
#: made under the attempt's name cannot carry it (it is chosen just before the create).
ANNOTATION_LAUNCH_ID = "sundial.dev/launch-id"
MAX_NAME_LENGTH = 63
RESERVED_ENV_PREFIX = "SUNDIAL_"
_HASH_CHARS = 10
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9._-]+")
_NOT_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class ManifestSettings:
    """What the installation decides for every Pod it launches."""

    instance: str = "sundial"
    #: The ServiceAccount Pods run as when the template names none (one with no token).
    service_account_name: str | None = None
    #: The image a handler job with executionModel pod runs in (``sundial exec HANDLER``).
    runner_image: str = "sundial-runner:latest"
    #: Multiply memory requests and limits by this after each OOMKilled attempt (1: never).
    oom_memory_factor: float = 1.0
    #: The largest memory (bytes) a bump may reach.
    oom_memory_cap_bytes: int = 8 * 1024**3
    #: Set an owner reference to the job's ScheduledJob (its uid is the job id).
    owner_references: bool = False
    #: The Pod's terminationGracePeriodSeconds when the template sets none.
    termination_grace_seconds: int = DEFAULT_TERMINATION_GRACE_SECONDS
    #: nodeSelector, tolerations and affinity of every Pod, under the template's own
    #: (``placement.apply``): how a handler job's Pod, which has no template, reaches a pool.
    placement: placements.Placement = field(default_factory=placements.Placement)


@dataclass(frozen=True)
class LaunchSpec:
    """One attempt to launch: the run as claimed and its job as stored."""

    run_id: int
    attempt: int
    job_id: str
    job_namespace: str
    job_name: str
    handler: str
    template: Mapping[str, Any]  # a PodTemplateSpec; {} for a handler run as a Pod
    args: Mapping[str, Any]
    idempotency_key: str
    fire_time: datetime | None
    timeout_seconds: int
    #: When the run became due (``SUNDIAL_RUN_AT``). A Pod gets no ``SUNDIAL_STARTED_AT``:
    #: its container starts later than the claim, and knows when it started.
    run_at: datetime | None = None
    oom_kills_before: int = 0  # earlier attempts of this run that were OOMKilled
    #: The job's oom.memoryIncreasePercent and oom.maxMemory; None: the installation's default.
    oom_memory_increase_percent: int | None = None
    oom_max_memory_bytes: int | None = None
    owner: Mapping[str, Any] | None = field(default=None)  # an explicit ownerReference
    launch_id: str = ""  # ANNOTATION_LAUNCH_ID; "" leaves it out
    #: ``SUNDIAL_FENCING_TOKEN`` (``ClaimedRun.fencing_token``); None: the attempt.
    fencing_token: int | None = None


def pod_name(instance: str, job_name: str, run_id: int, attempt: int) -> str:
    """``<job>-<hash of instance and run>-<attempt>``: deterministic, DNS-1123, <= 63 chars."""
    digest = hashlib.sha256(f"{instance}/{run_id}".encode()).hexdigest()[:_HASH_CHARS]
    tail = f"-{digest}-{attempt}"
    prefix = _NOT_DNS_LABEL.sub("-", job_name.lower()).strip("-")
    prefix = prefix[: MAX_NAME_LENGTH - len(tail)].rstrip("-") or "run"
    return prefix + tail


def environment(spec: LaunchSpec) -> dict[str, str]:
    """The ``SUNDIAL_*`` variables of the attempt; the same ones ``sundial exec`` reads
    (``runner.exec_command.environment_for``; a unit test holds the two equal)."""
    variables = {
        "SUNDIAL_RUN_ID": str(spec.run_id),
        "SUNDIAL_ATTEMPT": str(spec.attempt),
        "SUNDIAL_FENCING_TOKEN": str(
            spec.attempt if spec.fencing_token is None else spec.fencing_token
        ),
        "SUNDIAL_IDEMPOTENCY_KEY": spec.idempotency_key,
        "SUNDIAL_ARGS": json.dumps(dict(spec.args), default=str),
    }
    if spec.fire_time is not None:
        variables["SUNDIAL_FIRE_TIME"] = spec.fire_time.isoformat()
    if spec.run_at is not None:
        variables["SUNDIAL_RUN_AT"] = spec.run_at.isoformat()
    variables["SUNDIAL_NAMESPACE"] = spec.job_namespace
    return variables


def pod_manifest(spec: LaunchSpec, settings: ManifestSettings) -> dict[str, Any]:
    """The Pod (a JSON-ready dict) for ``spec``; see the module docstring for what it holds."""
    template = copy.deepcopy(dict(spec.template))
    metadata = dict(template.get("metadata") or {})
    pod_spec: dict[str, Any] = dict(template.get("spec") or {})
    if not pod_spec.get("containers"):
        pod_spec["containers"] = [
            {
                "name": "main",
                "image": settings.runner_image,
                "command": ["sundial", "exec", spec.handler],
            }
        ]
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    labels.update(
        {
            LABEL_JOB: _label_value(spec.job_name),
            LABEL_RUN_ID: str(spec.run_id),
            LABEL_ATTEMPT: str(spec.attempt),
            LABEL_INSTANCE: _label_value(settings.instance),
            LABEL_TRACKED: "true",
        }
    )
    annotations = {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()}
    if spec.fire_time is not None:
        annotations[ANNOTATION_FIRE_TIME] = spec.fire_time.isoformat()
    annotations.pop(ANNOTATION_LAUNCH_ID, None)  # the launcher's alone
    if spec.launch_id:
        annotations[ANNOTATION_LAUNCH_ID] = spec.launch_id
    pod_metadata: dict[str, Any] = {
        "name": pod_name(settings.instance, spec.job_name, spec.run_id, spec.attempt),
        "namespace": spec.job_namespace,
        "labels": labels,
        "annotations": annotations,
        "finalizers": [
            *(str(f) for f in metadata.get("finalizers") or () if f != OUTCOME_FINALIZER),
            OUTCOME_FINALIZER,
        ],
    }
    owner = spec.owner
    if owner is None and settings.owner_references:
        owner = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "name": spec.job_name,
            "uid": spec.job_id,
            "blockOwnerDeletion": False,
        }
    if owner is not None:
        pod_metadata["ownerReferences"] = [dict(owner)]

    placements.apply(pod_spec, settings.placement)
    pod_spec["restartPolicy"] = "Never"
    pod_spec["activeDeadlineSeconds"] = int(spec.timeout_seconds)
    pod_spec.setdefault("terminationGracePeriodSeconds", settings.termination_grace_seconds)
    _restrict(pod_spec, settings)
    run_env = environment(spec)
    factor, cap_bytes = memory_bump(spec, settings)
    for key in ("containers", "initContainers"):
        containers = [dict(c) for c in pod_spec.get(key) or []]
        for container in containers:
            container["env"] = _with_run_env(container.get("env") or [], run_env)
            if factor > 1:
                container["resources"] = bump_memory(
                    container.get("resources") or {}, factor, cap_bytes
                )
        if containers:
            pod_spec[key] = containers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": pod_spec}


def memory_bump(spec: LaunchSpec, settings: ManifestSettings) -> tuple[float, int]:
    """The factor this attempt's memory is multiplied by, and the cap in bytes: the job's
    ``oom`` settings where given, else the installation's; factor 1 before any OOM kill."""
    per_kill = (
        settings.oom_memory_factor
        if spec.oom_memory_increase_percent is None
        else 1 + spec.oom_memory_increase_percent / 100
    )
    cap_bytes = (
        settings.oom_memory_cap_bytes
        if spec.oom_max_memory_bytes is None
        else spec.oom_max_memory_bytes
    )
    if spec.oom_kills_before <= 0 or per_kill <= 1:
        return 1.0, cap_bytes
    return per_kill**spec.oom_kills_before, cap_bytes


def _label_value(value: str) -> str:
    # A label value is at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric.
    cleaned = _LABEL_VALUE.sub("-", value)[:63].strip("-_.")
    return cleaned


def _restrict(pod_spec: dict[str, Any], settings: ManifestSettings) -> None:
    pod_security = dict(pod_spec.get("securityContext") or {})
    pod_security.setdefault("runAsNonRoot", True)
    pod_security.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    pod_spec["securityContext"] = pod_security
    pod_spec.setdefault("automountServiceAccountToken", False)
    if settings.service_account_name and not pod_spec.get("serviceAccountName"):
        pod_spec["serviceAccountName"] = settings.service_account_name
    for key in ("containers", "initContainers"):
        containers = [dict(c) for c in pod_spec.get(key) or []]
        for container in containers:
            security = dict(container.get("securityContext") or {})
            if not security.get("privileged"):
                # The apiserver refuses privileged with allowPrivilegeEscalation false; a
                # privileged container gets here only where the namespace's level allows it.
                security.setdefault("allowPrivilegeEscalation", False)
            security.setdefault("capabilities", {"drop": ["ALL"]})
            security.setdefault("readOnlyRootFilesystem", True)
            container["securityContext"] = security
        if containers:
            pod_spec[key] = containers


def _with_run_env(
    env: Sequence[Mapping[str, Any]], run_env: Mapping[str, str]
) -> list[dict[str, Any]]:
    kept = [dict(v) for v in env if not str(v.get("name", "")).startswith(RESERVED_ENV_PREFIX)]
    return kept + [{"name": name, "value": value} for name, value in run_env.items()]


def bump_memory(resources: Mapping[str, Any], factor: float, cap_bytes: int) -> dict[str, Any]:
    """``resources`` with memory requests and limits multiplied by ``factor``, capped at
    ``cap_bytes`` (never lowered below what was asked). Quantities it cannot read are kept."""
    bumped: dict[str, Any] = copy.deepcopy(dict(resources))
    for section in ("requests", "limits"):
        values = bumped.get(section)
        if not isinstance(values, dict) or "memory" not in values:
            continue
        current = _memory_bytes(str(values["memory"]))
        if current is None:
            continue
        target = min(math.ceil(current * factor), max(cap_bytes, current))
        values["memory"] = str(target)
    return bumped


def _memory_bytes(quantity: str) -> int | None:
    return validate.memory_bytes(quantity)
