"""Applying CustomResourceDefinitions in the cluster tier and waiting until they serve.

``kubectl wait --for=condition=Established`` right after an apply once failed with
``.status.conditions accessor error``: the apiserver had not written the CRD's status yet, and
kubectl reads a missing list as an error, not as "not yet". Here the condition is read from
the CRD's JSON and polled, so a CRD without a status is simply not established yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from support import polling

SUNDIAL_CRDS = ("scheduledjobs.sundial.dev", "jobruns.sundial.dev")
#: An apiserver establishes a CRD within a second or two; a loaded CI machine may take longer.
ESTABLISHED_WITHIN = 120.0


def established(crd: Mapping[str, Any]) -> bool:
    """Whether a CRD object (as ``kubectl get -o json`` prints it) says ``Established=True``;
    a CRD with no status or no conditions yet is not."""
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def wait_established(
    kubectl: Callable[..., Any], names: Iterable[str], *, within: float = ESTABLISHED_WITHIN
) -> None:
    """Poll the named CRDs (``scheduledjobs.sundial.dev``) until every one is established."""
    names = [name.removeprefix("crd/") for name in names]

    def pending() -> list[str]:
        listing = json.loads(kubectl("get", "crd", *names, "-o", "json").stdout)
        items = listing["items"] if listing.get("kind") == "List" else [listing]
        done = {item["metadata"]["name"] for item in items if established(item)}
        return [name for name in names if name not in done]

    polling.wait_until(
        lambda: not pending(), within=within, what=f"CRDs established: {', '.join(names)}"
    )


def apply_sundial_crds(kubectl: Callable[..., Any], directory: Path) -> None:
    """Apply the repository's CRDs (server-side) and wait until they serve."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(directory))
    wait_established(kubectl, SUNDIAL_CRDS)
