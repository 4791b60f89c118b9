"""Where job Pods may run, decided once for the installation (pure).

A ScheduledJob's template places its own Pods; a handler job (``executionModel: pod``) has no
template, so without an installation-wide default its Pods can only land on nodes that ask
for nothing (an untainted pool), never on a dedicated, tainted pool for batch work. The
operator and ``sundial pod-launcher`` take ``--job-pod-node-selector``,
``--job-pod-toleration`` and ``--job-pod-affinity`` (chart values ``jobPods.nodeSelector``,
``jobPods.tolerations``, ``jobPods.affinity``), and every Pod they create gets them *under* what
its template says:

* ``nodeSelector``: the installation's keys, then the template's (a template's key wins).
* ``tolerations``: the template's, then each of the installation's not already there.
* ``affinity``: per kind (``nodeAffinity``, ``podAffinity``, ``podAntiAffinity``), the
  template's when it sets that kind, else the installation's.

A template can thus add to the placement or override a key, but cannot be pushed off a node
it selected. Bad flag values fail at start with a message that says which value and why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sundial.errors import SundialError

__all__ = [
    "Placement",
    "PlacementError",
    "apply",
    "parse_affinity",
    "parse_node_selector",
    "parse_toleration",
]

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_OPERATORS = ("Exists", "Equal")
_AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")
_TOLERATION_KEYS = {"key", "operator", "value", "effect", "tolerationSeconds"}
# A label key: an optional DNS-subdomain prefix and a name of at most 63 characters.
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


class PlacementError(SundialError, ValueError):
    """A job-Pod placement value that Kubernetes would refuse; the message says how to fix it."""


@dataclass(frozen=True)
class Placement:
    """The installation's placement of job Pods; empty places nothing."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    affinity: Mapping[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.node_selector or self.tolerations or self.affinity)


def parse_node_selector(values: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--job-pod-node-selector``) as a nodeSelector."""
    selector: dict[str, str] = {}
    for text in values:
        key, separator, value = text.partition("=")
        if not separator:
            raise PlacementError(f"--job-pod-node-selector {text!r}: write it as KEY=VALUE")
        if not _LABEL_KEY.match(key):
            raise PlacementError(
                f"--job-pod-node-selector {text!r}: {key!r} is not a label key "
                "(an optional DNS prefix and '/', then up to 63 of [A-Za-z0-9-_.])"
            )
        if not _LABEL_VALUE.match(value):
            raise PlacementError(
                f"--job-pod-node-selector {text!r}: {value!r} is not a label value "
                "(up to 63 of [A-Za-z0-9-_.], starting and ending alphanumeric)"
            )
        if key in selector and selector[key] != value:
            raise PlacementError(f"--job-pod-node-selector names {key!r} twice, with two values")
        selector[key] = value
    return selector


def parse_toleration(text: str) -> dict[str, Any]:
    """One ``--job-pod-toleration``: a JSON object (a Kubernetes toleration, as the chart
    passes them), or kubectl's taint syntax ``KEY[=VALUE][:EFFECT]`` (no value: operator
    Exists; a value: Equal; no effect: every effect)."""
    if text.lstrip().startswith("{"):
        try:
            found = json.loads(text)
        except json.JSONDecodeError as error:
            raise PlacementError(f"--job-pod-toleration {text!r}: not JSON ({error})") from None
        if not isinstance(found, dict):
            raise PlacementError(f"--job-pod-toleration {text!r}: must be a JSON object")
        return _checked_toleration(found, text)
    rest, colon, effect = text.rpartition(":") if ":" in text else (text, "", "")
    key, equals, value = rest.partition("=")
    toleration: dict[str, Any] = {"key": key, "operator": "Equal" if equals else "Exists"}
    if equals:
        toleration["value"] = value
    if colon:
        toleration["effect"] = effect
    return _checked_toleration(toleration, text)


def _checked_toleration(toleration: dict[str, Any], text: str) -> dict[str, Any]:
    where = f"--job-pod-toleration {text!r}"
    unknown = set(toleration) - _TOLERATION_KEYS
    if unknown:
        raise PlacementError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; a toleration has "
            f"{', '.join(sorted(_TOLERATION_KEYS))}"
        )
    for name in ("key", "operator", "value", "effect"):
        if name in toleration and not isinstance(toleration[name], str):
            raise PlacementError(f"{where}: {name} must be a string")
    operator = toleration.get("operator", "Equal")
    if operator not in _OPERATORS:
        raise PlacementError(f"{where}: operator must be Exists or Equal, not {operator!r}")
    key = toleration.get("key", "")
    if key and not _LABEL_KEY.match(key):
        raise PlacementError(f"{where}: {key!r} is not a taint key")
    if not key and operator != "Exists":
        raise PlacementError(f"{where}: an empty key tolerates every taint only with Exists")
    if operator == "Exists" and toleration.get("value"):
        raise PlacementError(f"{where}: operator Exists takes no value")
    effect = toleration.get("effect", "")
    if effect and effect not in _EFFECTS:
        raise PlacementError(
            f"{where}: effect must be one of {', '.join(_EFFECTS)}, not {effect!r}"
        )
    seconds = toleration.get("tolerationSeconds")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise PlacementError(f"{where}: tolerationSeconds must be an integer")
        if effect != "NoExecute":
            raise PlacementError(f"{where}: tolerationSeconds applies only to effect NoExecute")
    return toleration


def parse_affinity(text: str | None) -> dict[str, Any]:
    """``--job-pod-affinity``: a JSON object of a Pod's ``affinity`` (its kinds checked; their
    contents are left to the apiserver, which names any bad field when the Pod is created)."""
    if not text:
        return {}
    try:
        found = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlacementError(f"--job-pod-affinity: not JSON ({error})") from None
    if not isinstance(found, dict):
        raise PlacementError(
            '--job-pod-affinity: must be a JSON object such as {"nodeAffinity": ...}'
        )
    unknown = set(found) - set(_AFFINITY_KINDS)
    if unknown:
        raise PlacementError(
            f"--job-pod-affinity: unknown kind(s) {', '.join(sorted(unknown))}; "
            f"use {', '.join(_AFFINITY_KINDS)}"
        )
    for kind, value in found.items():
        if not isinstance(value, dict):
            raise PlacementError(f"--job-pod-affinity: {kind} must be an object")
    return found


def apply(pod_spec: dict[str, Any], placement: Placement) -> None:
    """Merge ``placement`` under ``pod_spec`` in place (the module docstring says how)."""
    if not placement:
        return
    if placement.node_selector:
        pod_spec["nodeSelector"] = {
            **placement.node_selector,
            **dict(pod_spec.get("nodeSelector") or {}),
        }
    if placement.tolerations:
        tolerations = [dict(t) for t in pod_spec.get("tolerations") or ()]
        for toleration in placement.tolerations:
            if dict(toleration) not in tolerations:
                tolerations.append(copy.deepcopy(dict(toleration)))
        pod_spec["tolerations"] = tolerations
    if placement.affinity:
        own = dict(pod_spec.get("affinity") or {})
        merged = {
            kind: copy.deepcopy(value)
            for kind, value in placement.affinity.items()
            if kind not in own
        }
        pod_spec["affinity"] = {**merged, **own}
