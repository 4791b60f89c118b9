"""Pieces shared by the ScheduledJob and JobRun resources.

Every model here is the single source of truth for two things at once: how the operator parses
an object (pydantic) and what the apiserver accepts at admission (the CRD schema that
``sundial.api.crd`` generates from these models). So every string and list is bounded here, and
every cross-field rule is written twice, side by side: as a CEL rule for the apiserver and as a
pydantic validator raising the very same message, so a manifest rejected by one is rejected by
the other with the same words.

The models are strict (docs/adr/0015): they accept what the CRD accepts and nothing the CRD
would refuse - no ``"5"`` for an integer, no ``1`` for a boolean, no number for a time - so a
manifest checked by the models alone (a Python caller, the demo's loader) is one the apiserver
admits. Free-form subtrees are checked by ``json_values`` so that nothing stored can fail the
PostgreSQL write.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, Self

import pydantic
from pydantic import alias_generators

from sundial.api import execution_model, json_values, messages, validate

GROUP: Final = "sundial.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = "sundial.dev/v1alpha1"

# Bounded string shapes, named once so the bounds are the same everywhere they appear.
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

DnsLabel = Annotated[str, pydantic.Field(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)]
"""A Kubernetes DNS-1123 label: a container name, a queue name."""

ObjectName = Annotated[
    str, pydantic.Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
]
"""The name of a namespaced Kubernetes object (DNS-1123 subdomain)."""

SINGLE_LINE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""A string with no control character (C0 or DEL): an image, a condition type, a label."""
NO_NUL_PATTERN = r"^[^\x00]*$"
"""A string without NUL, which PostgreSQL cannot store; other control characters are kept."""

SingleLine = Annotated[str, pydantic.Field(pattern=SINGLE_LINE_PATTERN)]
"""A free-form one-line string (its length is bounded where it is used)."""

RFC3339_PATTERN = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def _rfc3339(value: Any) -> Any:
    """A time as Kubernetes writes one (RFC 3339 with an offset), or a datetime; never a number
    (lax pydantic reads ``5`` as 1970-01-01T00:00:05Z) or a bare date."""
    if isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and RFC3339_PATTERN.match(value):
        return value
    raise ValueError(
        f"Invalid value: {value!r:.80}: must be an RFC 3339 date-time with an offset,"
        " e.g. 2026-11-30T08:00:00Z"
    )


Timestamp = Annotated[
    pydantic.AwareDatetime,
    pydantic.Strict(False),  # strings are parsed: a manifest's times are RFC 3339 text
    pydantic.BeforeValidator(_rfc3339),
]
"""A ``format: date-time`` field: an aware datetime, or RFC 3339 text with an offset."""


def rfc3339(moment: datetime.datetime | None) -> str | None:
    """A time as Kubernetes writes one (UTC, whole seconds), so re-writes compare equal."""
    if moment is None:
        return None
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


ExecutionModel = execution_model.ExecutionModel
"""The one enum of execution models (``sundial.api.execution_model``)."""

ExecutionModelValue = Annotated[ExecutionModel, pydantic.Strict(False)]
"""A manifest names a model by its string; non-strict here only so the string becomes the
enum (a number or a boolean is still refused)."""

DEFAULT_TIMEOUT_SECONDS = 300
"""The per-attempt timeout when neither the manifest nor the handler's registration sets one."""

FailureAction = Literal["Retry", "Ignore", "Fail", "Quarantine"]
PodDeletionPolicy = Literal["Retry", "Cancel"]
ExitCodeOperator = Literal["In", "NotIn"]
ConditionStatus = Literal["True", "False", "Unknown"]


@dataclasses.dataclass(frozen=True)
class CelRule:
    """One cross-field rule, stated for the apiserver (CEL) with the message both sides use."""

    rule: str
    message: str
    field_path: str | None = None
    """Where the apiserver reports a violation, relative to the node (e.g. ``.maxBackfill``)."""

    def as_schema(self) -> dict[str, str]:
        schema = {"rule": self.rule, "message": self.message}
        if self.field_path is not None:
            schema["fieldPath"] = self.field_path
        return schema


def cel_rules(*rules: CelRule) -> dict[str, Any]:
    """The ``json_schema_extra`` that puts ``rules`` on a model's schema node."""
    return {"x-kubernetes-validations": [rule.as_schema() for rule in rules]}


class ApiModel(pydantic.BaseModel):
    """Base of every API model: camelCase on the wire, snake_case in Python, no unknown fields.

    Unknown fields are rejected rather than ignored so that a typo in a manifest or test fails
    loudly; the apiserver prunes unknown fields before the operator ever sees an object.
    """

    model_config = pydantic.ConfigDict(
        alias_generator=alias_generators.to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        use_attribute_docstrings=True,
        strict=True,
    )

    @pydantic.model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """An explicit null of a declared field is that field left out: the apiserver prunes
        nulls of non-nullable fields before defaulting, so ``priority: null`` is the default
        there and must be here (a required field left null is then "Required value")."""
        if not isinstance(data, dict) or None not in data.values():
            return data
        declared = set(cls.model_fields)
        declared.update(field.alias for field in cls.model_fields.values() if field.alias)
        return {
            key: value for key, value in data.items() if value is not None or key not in declared
        }

    def to_manifest(self) -> dict[str, Any]:
        """The object as Kubernetes stores it: camelCase keys, unset fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class FreeFormModel(ApiModel):
    """A model that keeps fields it does not declare (``x-kubernetes-preserve-unknown-fields``);
    what it keeps must be storable JSON (``json_values``), since it is stored as it is."""

    model_config = pydantic.ConfigDict(extra="allow")

    @pydantic.model_validator(mode="after")
    def _storable_extras(self) -> Self:
        if self.model_extra:
            json_values.check(dict(self.model_extra))
        return self


FreeFormObject = Annotated[
    dict[str, Any],
    pydantic.Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}),
    pydantic.AfterValidator(json_values.check),
]
"""A free-form JSON object, checked by ``json_values`` (depth, NUL, JSON types)."""

Args = Annotated[
    dict[str, Any],
    pydantic.Field(
        max_length=validate.MAX_ARGS_KEYS,
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    ),
    # Depth and characters first: measuring the size encodes the value, which recurses.
    pydantic.AfterValidator(json_values.check),
    pydantic.AfterValidator(validate.validate_args_size),
]
"""Free-form JSON arguments. The schema bounds the number of top-level keys; depth, NUL and
JSON types are checked by ``json_values.check`` and the serialized size bound
(``validate.MAX_ARGS_BYTES``) by ``validate.validate_args_size``."""

UID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
MetadataText = Annotated[str, pydantic.Field(max_length=256 * 1024, pattern=NO_NUL_PATTERN)]


class ObjectMeta(ApiModel):
    """The part of ``metadata`` Sundial reads; everything else is kept as it is, unchecked
    (the apiserver owns it, and none of it is stored)."""

    model_config = pydantic.ConfigDict(extra="allow")

    name: ObjectName | None = None
    namespace: DnsLabel | None = None
    uid: str | None = pydantic.Field(default=None, max_length=36, pattern=UID_PATTERN)
    generation: int | None = pydantic.Field(default=None, ge=0)
    labels: dict[MetadataText, MetadataText] | None = None
    annotations: dict[MetadataText, MetadataText] | None = None


class HandlerSpec(ApiModel):
    """A handler registered in the runner image's allow-list, and how to run it."""

    name: str = pydantic.Field(min_length=1, max_length=253, pattern=r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
    """The registered handler name. It is looked up in the runner's allow-list, never imported."""
    execution_model: ExecutionModelValue | None = None
    """async, thread, process or subprocess in a runner pool; pod in a Pod of the runner image.
    Absent: the handler's registration (``@sundial.job(execution_model=...)``) decides; a runner
    model other than the registration's is an error shown on the runs."""
    args: Args | None = None
    """Arguments handed to the handler; a JobRun's ``args`` are merged over these, key by key."""


RETRY_CAP_NOT_BELOW_BASE = CelRule(
    rule="self.backoffCapSeconds >= self.backoffBaseSeconds",
    message="retry.backoffCapSeconds must be at least retry.backoffBaseSeconds",
    field_path=".backoffCapSeconds",
)


class RetrySpec(ApiModel):
    """Retries of a failed attempt with capped exponential backoff and full jitter."""

    model_config = pydantic.ConfigDict(json_schema_extra=cel_rules(RETRY_CAP_NOT_BELOW_BASE))

    max_retries: int = pydantic.Field(default=3, ge=0, le=100)
    """Retries after the first attempt; when they are used up the run is dead-lettered, or
    timed out if its last attempt ran past timeoutSeconds."""
    backoff_base_seconds: int = pydantic.Field(default=1, ge=1, le=3600)
    """The backoff before retry n is a random value in [0, min(cap, base * 2**n)]."""
    backoff_cap_seconds: int = pydantic.Field(default=300, ge=1, le=86400)
    """The largest backoff between two attempts."""
    max_lost_leases: int = pydantic.Field(default=3, ge=0, le=100)
    """Times a run is executed again after its runner died or stalled (a lost lease); the next
    loss dead-letters it. Never spends maxRetries, so maxRetries: 0 still survives a crash."""

    @pydantic.model_validator(mode="after")
    def _cap_not_below_base(self) -> RetrySpec:
        if self.backoff_cap_seconds < self.backoff_base_seconds:
            raise ValueError(RETRY_CAP_NOT_BELOW_BASE.message)
        return self


EXIT_CODE_ZERO_NOT_IN = CelRule(
    rule="self.operator != 'In' || !self.values.exists(v, v == 0)",
    message="exit code 0 means success and cannot be matched with operator In",
    field_path=".values",
)


class ExitCodeMatch(ApiModel):
    """Matches an attempt by its exit code (a Pod's main container, or a subprocess)."""

    model_config = pydantic.ConfigDict(json_schema_extra=cel_rules(EXIT_CODE_ZERO_NOT_IN))

    container_name: DnsLabel | None = None
    """Only this container's exit code counts; by default any container's."""
    operator: ExitCodeOperator
    values: list[Annotated[int, pydantic.Field(ge=-255, le=255)]] = pydantic.Field(
        min_length=1,
        max_length=32,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    """Exit codes to match; negative values are signals (a process killed by SIGKILL is -9)."""

    @pydantic.model_validator(mode="after")
    def _zero_is_success(self) -> ExitCodeMatch:
        if self.operator == "In" and 0 in self.values:
            raise ValueError(EXIT_CODE_ZERO_NOT_IN.message)
        if len(set(self.values)) != len(self.values):
            raise ValueError("onExitCodes.values must not repeat a value")
        return self


class PodConditionMatch(ApiModel):
    """Matches an attempt by a condition on its Pod, e.g. ``DisruptionTarget``."""

    type: str = pydantic.Field(min_length=1, max_length=316, pattern=SINGLE_LINE_PATTERN)
    status: ConditionStatus = "True"


EXACTLY_ONE_MATCHER = CelRule(
    rule=(
        "(has(self.onExitCodes) ? 1 : 0) + (has(self.onPodConditions) ? 1 : 0)"
        " + (has(self.onOOMKilled) ? 1 : 0) == 1"
    ),
    message="a failurePolicy rule needs exactly one of onExitCodes, onPodConditions or onOOMKilled",
)
OOM_KILLED_IS_TRUE = CelRule(
    rule="!has(self.onOOMKilled) || self.onOOMKilled",
    message="onOOMKilled, when set, must be true",
)


class FailurePolicyRule(ApiModel):
    """What to do with a failed attempt that matches; the first matching rule wins."""

    model_config = pydantic.ConfigDict(
        json_schema_extra=cel_rules(EXACTLY_ONE_MATCHER, OOM_KILLED_IS_TRUE)
    )

    action: FailureAction
    """Retry (with backoff, counted), Ignore (not counted against maxRetries), Fail (no retry) or
    Quarantine (fail and suspend the ScheduledJob)."""
    on_exit_codes: ExitCodeMatch | None = None
    on_pod_conditions: list[PodConditionMatch] | None = pydantic.Field(
        default=None, min_length=1, max_length=8
    )
    """Matches when any of these conditions is on the Pod."""
    on_oom_killed: bool | None = pydantic.Field(default=None, alias="onOOMKilled")
    """Matches an attempt its container runtime reports ``OOMKilled`` (exit 137 alone is not)."""

    @pydantic.model_validator(mode="after")
    def _exactly_one_matcher(self) -> FailurePolicyRule:
        matchers = (self.on_exit_codes, self.on_pod_conditions, self.on_oom_killed)
        if sum(matcher is not None for matcher in matchers) != 1:
            raise ValueError(EXACTLY_ONE_MATCHER.message)
        if self.on_oom_killed is False:
            raise ValueError(OOM_KILLED_IS_TRUE.message)
        return self


class FailurePolicy(ApiModel):
    """Rules mapping a failed attempt onto an action; unmatched failures are retried."""

    rules: list[FailurePolicyRule] = pydantic.Field(min_length=1, max_length=20)


MEMORY_QUANTITY_PATTERN = (
    r"^(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[kMGTPE]|([eE][0-9]{1,2}))?$"
)
"""A Kubernetes quantity of bytes (``512Mi``, ``4Gi``, ``1e9``): no sign, no milli-bytes."""


MAX_CONCURRENCY_LIMIT = 10_000


class ConcurrencyKey(ApiModel):
    """A limit shared by every job of the namespace that names the same key: at most ``limit``
    of their runs are due for a runner or running at once; the others wait (``status.waiting``,
    reason ``ConcurrencyLimit``) and start, oldest first, as those end."""

    name: str = pydantic.Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
    """The key, e.g. ``warehouse``; keys are per namespace."""
    limit: int = pydantic.Field(ge=1, le=MAX_CONCURRENCY_LIMIT)
    """Runs of the key at once. Jobs naming one key should give one limit: each waiting run is
    held to the limit its own job gives."""


class OomSpec(ApiModel):
    """What an OOMKilled attempt does (a Pod whose container the runtime reports ``OOMKilled``).

    OOM kills have their own retry budget: they never spend ``retry.maxRetries``, and errors
    never spend ``oom.maxRetries``. Each retry after an OOM kill may get more memory: every
    container's memory request and limit grow by ``memoryIncreasePercent`` per earlier OOM
    kill of the run (compounded), never above ``maxMemory``. When the budget is spent the run
    is dead-lettered with reason ``oom``.
    """

    max_retries: int = pydantic.Field(default=2, ge=0, le=100)
    """Retries after OOM kills, apart from retry.maxRetries; 0: the first OOM kill ends the run."""
    memory_increase_percent: int | None = pydantic.Field(default=None, ge=0, le=1000)
    """Grow memory requests and limits by this percentage per earlier OOM kill (50: x1.5, then
    x2.25). 0 never grows them. Absent: the operator's default (no growth unless configured)."""
    max_memory: str | None = pydantic.Field(
        default=None, min_length=1, max_length=64, pattern=MEMORY_QUANTITY_PATTERN
    )
    """The most memory a grown request or limit may reach, as a quantity (e.g. 4Gi); a template
    that asks for more keeps what it asks. Absent: the operator's cap (8Gi by default)."""

    @pydantic.field_validator("max_memory")
    @classmethod
    def _positive_quantity(cls, value: str | None) -> str | None:
        if value is None:
            return value
        size = validate.memory_bytes(value)
        if not size:
            raise ValueError(
                f"oom.maxMemory {value!r} is not a positive memory quantity:"
                " write it like 512Mi or 4Gi"
            )
        if size > validate.MAX_MEMORY_BYTES:
            raise ValueError(
                f"oom.maxMemory {value!r} is more than 8Ei, which no node has (and PostgreSQL's"
                " bigint cannot hold): write a real size like 64Gi"
            )
        return value

    @property
    def max_memory_bytes(self) -> int | None:
        return None if self.max_memory is None else validate.memory_bytes(self.max_memory)


class Container(FreeFormModel):
    """A container of the Pod template; only the fields the operator reads are declared."""

    name: DnsLabel
    image: str | None = pydantic.Field(default=None, max_length=1024, pattern=SINGLE_LINE_PATTERN)


class PodSpec(FreeFormModel):
    """A Pod spec; the apiserver validates it in full when the operator creates the Pod."""

    containers: list[Container] = pydantic.Field(min_length=1, max_length=32)


class PodTemplate(FreeFormModel):
    """A PodTemplateSpec. Only its skeleton is declared (see docs/adr/0003): the rest is kept as
    written and validated by the apiserver when the Pod is created."""

    metadata: FreeFormObject | None = None
    spec: PodSpec


EXACTLY_ONE_OF_HANDLER_OR_TEMPLATE = CelRule(
    rule="has(self.handler) != has(self.template)",
    message="exactly one of handler or template must be set",
)
START_TIMEOUT_ONLY_FOR_PODS = CelRule(
    rule=(
        "!has(self.startTimeoutSeconds) || has(self.template)"
        " || (has(self.handler) && has(self.handler.executionModel)"
        " && self.handler.executionModel == 'pod')"
    ),
    message="startTimeoutSeconds applies only to Pod jobs (template or executionModel pod)",
    field_path=".startTimeoutSeconds",
)
_RUNS_IN_POD = (
    "has(self.template)"
    " || (has(self.handler) && has(self.handler.executionModel)"
    " && self.handler.executionModel == 'pod')"
)
OOM_ONLY_FOR_PODS = CelRule(
    rule=f"!has(self.oom) || {_RUNS_IN_POD}",
    message="oom applies only to Pod jobs (template or executionModel pod)",
    field_path=".oom",
)
POD_DELETION_POLICY_ONLY_FOR_PODS = CelRule(
    rule=f"!has(self.podDeletionPolicy) || {_RUNS_IN_POD}",
    message="podDeletionPolicy applies only to Pod jobs (template or executionModel pod)",
    field_path=".podDeletionPolicy",
)
JOB_RULES = (
    EXACTLY_ONE_OF_HANDLER_OR_TEMPLATE,
    START_TIMEOUT_ONLY_FOR_PODS,
    OOM_ONLY_FOR_PODS,
    POD_DELETION_POLICY_ONLY_FOR_PODS,
)


class JobSpec(ApiModel):
    """The job itself: what runs and how failures are handled.

    A ScheduledJob spec carries these fields beside its schedule; a JobRun carries them under
    ``job`` when it does not name a ScheduledJob.
    """

    model_config = pydantic.ConfigDict(json_schema_extra=cel_rules(*JOB_RULES))

    handler: HandlerSpec | None = None
    """A registered handler for the runner pools (or a Pod of the runner image)."""
    template: PodTemplate | None = None
    """A PodTemplateSpec: every attempt runs as one Pod (restartPolicy is forced to Never)."""
    queue: DnsLabel = "default"
    """The runner queue that claims the runs."""
    priority: int = pydantic.Field(default=1, ge=0, le=9)
    """0-9; strict across levels, with aging so that low priority never starves."""
    timeout_seconds: int | None = pydantic.Field(default=None, ge=1, le=7 * 86400)
    """Per-attempt timeout; the attempt ends TimedOut. Absent: the handler's registration
    (``@sundial.job(timeout_seconds=...)``), else 300."""
    start_timeout_seconds: int | None = pydantic.Field(default=None, ge=1, le=86400)
    """Pod jobs only: fail an attempt whose Pod is not running after this long."""
    retry: RetrySpec | None = None
    failure_policy: FailurePolicy | None = None
    oom: OomSpec | None = None
    """Pod jobs only: the retry budget of OOMKilled attempts and the memory bump on retry.
    Absent: 2 retries after OOM kills, with the operator's default bump."""
    pod_deletion_policy: PodDeletionPolicy | None = None
    """Pod jobs only: what happens when someone else deletes an attempt's running Pod (kubectl
    delete, a namespace clean-up). Retry (the default): the attempt failed as a crash and is
    retried with backoff, spending retry.maxRetries. Cancel: the run ends Cancelled, as with
    a JobRun's ``cancel: true``, and its dependents are cancelled. A Pod that Kubernetes evicts
    or preempts (a DisruptionTarget condition) is a disruption, not a deletion: it is retried
    without spending maxRetries whatever this says. failurePolicy rules do not see deletions."""
    dependency: str | None = pydantic.Field(
        default=None, min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """A circuit-breaker key naming the downstream this job depends on. Runners key their
    breaker and retry budget on it (before the handler's registered ``dependency``), and the
    operator marks the job Degraded while that circuit is open. Pod runs have no breaker."""
    concurrency_key: ConcurrencyKey | None = None
    """Share a limit of runs at once with the namespace's other jobs naming the same key (at
    most 2 runs that touch the warehouse, across all the jobs that do)."""

    @pydantic.model_validator(mode="after")
    def _job_shape(self) -> JobSpec:
        if (self.handler is None) == (self.template is None):
            raise ValueError(EXACTLY_ONE_OF_HANDLER_OR_TEMPLATE.message)
        runs_in_pod = self.template is not None or (
            self.handler is not None and self.handler.execution_model == "pod"
        )
        if self.start_timeout_seconds is not None and not runs_in_pod:
            raise ValueError(START_TIMEOUT_ONLY_FOR_PODS.message)
        if self.oom is not None and not runs_in_pod:
            raise ValueError(OOM_ONLY_FOR_PODS.message)
        if self.pod_deletion_policy is not None and not runs_in_pod:
            raise ValueError(POD_DELETION_POLICY_ONLY_FOR_PODS.message)
        return self


class Condition(ApiModel):
    """A status condition in the shape of ``metav1.Condition``."""

    type: str = pydantic.Field(
        min_length=1,
        max_length=316,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    )
    status: ConditionStatus
    reason: str = pydantic.Field(
        min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    )
    message: str = pydantic.Field(max_length=32768, pattern=NO_NUL_PATTERN)
    last_transition_time: Timestamp
    observed_generation: int | None = pydantic.Field(default=None, ge=0)


Conditions = Annotated[
    list[Condition],
    pydantic.Field(
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    ),
]
"""Conditions, at most one per type (a list-map keyed by ``type``)."""


def metadata_problem(body: Mapping[str, Any]) -> str | None:
    """Why ``metadata`` cannot key a stored object (name, namespace, uid, generation), or None.

    The apiserver guarantees these; a body from anywhere else (a test, a Python caller) is
    checked so that a bad one is reported, not raised from ``uuid.UUID`` or the database."""
    metadata = body.get("metadata")
    try:
        parsed = ObjectMeta.model_validate(metadata if metadata is not None else {})
    except pydantic.ValidationError as error:
        return messages.describe(error, root="metadata")
    missing = [key for key in ("name", "namespace", "uid") if getattr(parsed, key) is None]
    if missing:
        return "; ".join(f"metadata.{key}: Required value" for key in missing)
    return None
