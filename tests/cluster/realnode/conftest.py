"""Real-node tests: the session's control plane (tests/cluster/conftest.py) with one real node
joined (``real_node``), a real PostgreSQL database per test, and the launcher's and the
operator's helpers and fixtures from ``tests/support``, shared with the kwok tests rather than
copied.

Skips, with what is missing, where the machine cannot host the node: not root, no writable
cgroups, the containerd/runc/CNI packages absent and not installable, no images.
"""

from __future__ import annotations

import pytest

from sundial.localdev import real_node as real_nodes


@pytest.fixture(scope="session")
def real_node(real_node_of_session: real_nodes.RealNode) -> real_nodes.RealNode:
    """The session cluster's real node (joined on first use, removed with the cluster)."""
    return real_node_of_session
