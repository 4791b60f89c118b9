"""The e2e tier: Sundial's user stories end to end on a Kubernetes cluster with real images.

Here that is the local control plane of ``hack/cluster`` with its real node (a kubelet,
containerd, runc) and the images ``hack/images/build`` makes; Sundial is installed by its Helm
chart (``sundial.localdev.install``: operator, runner and PostgreSQL as Pods), and the tests
act as a user does, with ``kubectl`` only. Nothing is shared with ``tests/``: this tier
starts its own cluster, per session, in a temporary directory, and ``hack/cluster/down``
leaves the machine as it found it (a watchdog runs it even if the session is killed).

Where the machine cannot host the real node (not root, no writable cgroups, containerd, runc
or the CNI plugins missing and not installable) or the control plane cannot be built (no Go
and nothing cached), every test skips and says what is missing.

``SUNDIAL_E2E_KUBECONFIG=/path``: use that cluster instead (or ``SUNDIAL_E2E_KUBECONFIG=current``
for ``~/.kube/config``'s current context). Nothing is built or started; the chart is installed
with the values file ``SUNDIAL_E2E_VALUES`` (the images your cluster can pull, a handler image
holding ``examples/handlers`` as runner image) and job Pods use ``SUNDIAL_E2E_BUSYBOX_IMAGE``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from e2e_target import Target, prepare, session_target


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build what a cold machine lacks (the control plane, the images) before any test's
    timeout starts: ``e2e_target.prepare``."""
    if not session.items:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("e2e: building what the cache lacks (binaries, images), once")
    prepare()


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The cluster with Sundial installed by its chart, for the whole session."""
    yield from session_target(tmp_path_factory)
