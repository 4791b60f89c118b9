"""Real-node tests: the session's control plane (tests/cluster/conftest.py) with one real node
joined (``real_node``), a real PostgreSQL database per test, and the helpers and fixtures of
tests/cluster/pods (the launcher) and tests/cluster/operator (the operator as a subprocess),
shared rather than copied.

Skips, with what is missing, where the machine cannot host the node: not root, no writable
cgroups, the containerd/runc/CNI packages absent and not installable, no images.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sundial.localdev import real_node as real_nodes

# pod_testing and operator_testing live beside the kwok tests of the launcher and operator.
sys.path.insert(0, str(Path(__file__).parents[1] / "pods"))
sys.path.insert(0, str(Path(__file__).parents[1] / "operator"))

_INTEGRATION = Path(__file__).parents[2] / "integration" / "conftest.py"
_spec = importlib.util.spec_from_file_location("sundial_integration_fixtures", _INTEGRATION)
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

migrated_template = _fixtures.migrated_template
store_dsn = _fixtures.store_dsn
pool = _fixtures.pool

_OPERATOR = Path(__file__).parents[1] / "operator" / "conftest.py"
_operator_spec = importlib.util.spec_from_file_location("sundial_operator_fixtures", _OPERATOR)
assert _operator_spec is not None and _operator_spec.loader is not None
_operator_fixtures = importlib.util.module_from_spec(_operator_spec)
_operator_spec.loader.exec_module(_operator_fixtures)

sundial_crds_applied = _operator_fixtures.sundial_crds_applied
operator_template = _operator_fixtures.operator_template
operator_dsn = _operator_fixtures.operator_dsn
pod_operator = _operator_fixtures.pod_operator


@pytest.fixture(scope="session")
def real_node(real_node_of_session: real_nodes.RealNode) -> real_nodes.RealNode:
    """The session cluster's real node (joined on first use, removed with the cluster)."""
    return real_node_of_session
