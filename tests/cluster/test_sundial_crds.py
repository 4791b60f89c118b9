"""Sundial's generated CRDs and example manifests pass the real apiserver's validation.

tests/unit/api checks the CEL rules with cel-python; only a kube-apiserver proves that
the schemas are structural, that their CEL compiles within the cost budget, and that the
examples a new user applies first are accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.crds import apply_sundial_crds

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPOSITORY / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def sundial_crds(kubectl: Any) -> None:
    apply_sundial_crds(kubectl, REPOSITORY / "crds")


@pytest.mark.usefixtures("sundial_crds")
@pytest.mark.parametrize("manifest", EXAMPLES, ids=lambda path: path.name)
def test_example_manifest_is_accepted(manifest: Path, kubectl: Any, namespace: str):
    result = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(manifest))
    assert "created (server dry run)" in result.stdout
