"""Fixtures for the operator on the local control plane (a ``pytest_plugins`` module): CRDs,
a migrated database per test, and the operator as a subprocess (``support.operator``'s
``OperatorProcess``). They ask for the cluster tier's fixtures (``kubectl``, ``kubeconfig``,
``namespace``; tests/cluster/conftest.py), so only tests under tests/cluster can use them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.crds import apply_sundial_crds
from support.operator import REPOSITORY, OperatorProcess, running


@pytest.fixture(scope="session")
def sundial_crds_applied(kubectl: Any) -> None:
    apply_sundial_crds(kubectl, REPOSITORY / "crds")


@pytest.fixture
def operator_dsn(make_database: Callable[..., str], migrated_template: str) -> str:
    """A fresh, migrated database for one test (``store_dsn`` by the name the operator's
    tests know it by)."""
    return make_database(template=migrated_template)


@pytest.fixture
def sundial_operator(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> Iterator[OperatorProcess]:
    """A running operator watching the test's namespace; stopped (SIGTERM) afterwards."""
    with running(OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path)) as process:
        yield process


@pytest.fixture
def pod_operator(
    sundial_crds_applied: None,
    operator_dsn: str,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> Iterator[OperatorProcess]:
    """An operator whose launcher labels its Pods with the test's namespace, so it never
    mistakes another test's Pods for stale ones of its own (nor collects them); it sweeps
    ended Pods on every mirror pass (``--pod-gc-seconds 1``)."""
    arguments = ["--pod-instance", namespace, "--pod-gc-seconds", "1"]
    with running(
        OperatorProcess(operator_dsn, kubeconfig, namespace, tmp_path, extra_args=arguments)
    ) as process:
        yield process
