"""Real-node tests: the session's control plane (tests/cluster/conftest.py) with one real node
joined (``real_node``), a real PostgreSQL database per test, and the pod launcher's helpers of
tests/cluster/pods, shared rather than copied.

Skips, with what is missing, where the machine cannot host the node: not root, no writable
cgroups, the containerd/runc/CNI packages absent and not installable, no images.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sundial.localdev import real_node as real_nodes

# pod_testing (the launcher's helpers) lives beside the kwok launcher tests.
sys.path.insert(0, str(Path(__file__).parents[1] / "pods"))

_INTEGRATION = Path(__file__).parents[2] / "integration" / "conftest.py"
_spec = importlib.util.spec_from_file_location("sundial_integration_fixtures", _INTEGRATION)
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

migrated_template = _fixtures.migrated_template
store_dsn = _fixtures.store_dsn
pool = _fixtures.pool


@pytest.fixture(scope="session")
def real_node(real_node_of_session: real_nodes.RealNode) -> real_nodes.RealNode:
    """The session cluster's real node (joined on first use, removed with the cluster)."""
    return real_node_of_session
