"""Applying Sundial's CustomResourceDefinitions in the cluster tier and waiting until they serve.

The waiting is ``sundial.localdev.crds``'s, the one the demo and the benchmarks use: it polls
the CRDs' JSON, because ``kubectl wait --for=condition=Established`` fails at once on a CRD whose
status the apiserver has not written yet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sundial.localdev import crds


def apply_sundial_crds(kubectl: Callable[..., Any], directory: Path) -> None:
    """Apply the repository's CRDs (server-side) and wait until they serve."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(directory))
    crds.wait_established(kubectl, crds.SUNDIAL_CRDS)


def open_definition(group: str, plural: str, kind: str) -> dict[str, Any]:
    """A namespaced CRD ``plural.group`` whose objects keep whatever they are given (``status``
    too: no subresource), for tests that need some kind the apiserver serves."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
