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
