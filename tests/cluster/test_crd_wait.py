"""``sundial.localdev.crds.wait_established``, the one wait for CRDs of the demo, the
benchmarks and the tests: it returns once they serve, and fails naming the CRD that never will.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sundial.localdev import cluster, crds
from support import crds as support_crds

GROUP = "crd-wait.sundial.dev"


@pytest.fixture
def applied(kubectl: Callable[..., Any]) -> Iterator[Callable[[str, str], str]]:
    """Create a CRD (plural, kind) straight away, as an apply would; its name. Deleted after."""
    names: list[str] = []

    def create(plural: str, kind: str) -> str:
        definition = support_crds.open_definition(GROUP, plural, kind)
        kubectl("create", "-f", "-", stdin=json.dumps(definition))
        names.append(definition["metadata"]["name"])
        return names[-1]

    try:
        yield create
    finally:
        if names:
            kubectl("delete", "--wait=false", *(f"crd/{name}" for name in names))


def test_the_wait_returns_once_a_crd_just_created_is_established(
    kubectl: Callable[..., Any], applied: Callable[[str, str], str]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    name = applied(f"gadgets{suffix}", f"Gadget{suffix}")
    crds.wait_established(kubectl, [f"crd/{name}"])
    assert crds.established(json.loads(kubectl("get", "crd", name, "-o", "json").stdout))


def test_the_wait_fails_naming_a_crd_that_is_never_established(
    kubectl: Callable[..., Any], applied: Callable[[str, str], str]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    first = applied(f"widgets{suffix}", f"Widget{suffix}")
    crds.wait_established(kubectl, [first])
    # The same kind again under another plural: its names are refused, so it never serves.
    clash = applied(f"others{suffix}", f"Widget{suffix}")
    with pytest.raises(cluster.ClusterError, match=f"not Established within 3s: {clash}"):
        crds.wait_established(kubectl, [first, clash], within=3)
