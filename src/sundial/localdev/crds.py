"""Waiting until CustomResourceDefinitions serve: the one way the demo, the benchmarks and the
tests do it.

``kubectl wait --for=condition=Established`` straight after ``kubectl apply`` can fail at once
with ``.status.conditions accessor error``. The apiserver stores a new CRD with
``status.conditions: null``; its naming controller writes the conditions a moment later, and
kubectl reads a null list as an error, not as "not yet". A ``--for=jsonpath`` filter on the
conditions (``[?(@.type=="Established")]``) fails on it the same way. So here the CRD's JSON is
polled, and a CRD whose conditions are not written yet is simply not established yet. By hand,
the README waits twice: ``--for=jsonpath='{.status.conditions[0].type}'`` (which skips a null
list) until the conditions exist, then ``--for=condition=Established``.

Established is not yet serving: for a moment after a CRD is made (or changed) the apiserver
answers its LISTs and watches with ``429 storage is (re)initializing``. kopf retries that, but
logs each refused watch as an error, which an operator started straight after the wait shows.
So the wait ends with one small LIST of each resource, which kubectl's client repeats after the
``Retry-After`` the apiserver sends until the storage serves.

Guarantees: a kubectl error (no such CRD, no apiserver) fails at once; only "not yet" is waited
on, for at most ``within`` seconds, and the error then names the CRDs still not established.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sundial.localdev import cluster

__all__ = ["ESTABLISHED_WITHIN", "SUNDIAL_CRDS", "established", "wait_established"]

SUNDIAL_CRDS = ("scheduledjobs.sundial.dev", "jobruns.sundial.dev")
#: An apiserver establishes a CRD within a second or two; a loaded machine may take longer.
ESTABLISHED_WITHIN = 120.0

#: Runs kubectl with these arguments and returns its output; raises when kubectl fails
#: (``LocalCluster.kubectl``, the demo's, the tests' fixture).
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def established(crd: Mapping[str, Any]) -> bool:
    """Whether a CRD object (as ``kubectl get -o json`` prints it) says ``Established=True``;
    a CRD with no status or no conditions yet (``null``) is not."""
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def wait_established(
    kubectl: Kubectl,
    names: Iterable[str] = SUNDIAL_CRDS,
    *,
    within: float = ESTABLISHED_WITHIN,
    every: float = 0.2,
) -> float:
    """Poll the named CRDs (``scheduledjobs.sundial.dev`` or ``crd/scheduledjobs.sundial.dev``)
    until every one is established; return the seconds it took. Raises
    :class:`~sundial.localdev.cluster.ClusterError` after ``within`` seconds."""
    wanted = [name.removeprefix("crd/") for name in names]
    started = time.monotonic()
    pause = 0.01  # quick at first: right after an apply the status is usually a moment away
    while True:
        listing = json.loads(kubectl("get", "crd", *wanted, "-o", "json").stdout)
        items = listing["items"] if listing.get("kind") == "List" else [listing]
        done = {item["metadata"]["name"] for item in items if established(item)}
        pending = [name for name in wanted if name not in done]
        if not pending:
            for item in items:
                kubectl("get", "--raw", _list_path(item))
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise cluster.ClusterError(
                f"CRDs not Established within {within:.0f}s: {', '.join(pending)}; "
                f"see `kubectl get crd {' '.join(pending)} -o yaml`"
            )
        time.sleep(pause)
        pause = min(pause * 2, every)


def _list_path(crd: Mapping[str, Any]) -> str:
    """The API path of a LIST of at most one object of the CRD's resource, in its first served
    version, across namespaces."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served", True))
    return f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?limit=1"
