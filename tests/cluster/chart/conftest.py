"""Fixtures for the chart's tests: helm (built with the control plane) and rendering."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from chart_testing import CHART

from sundial.localdev import cluster


@pytest.fixture(scope="session")
def helm_binary() -> pathlib.Path:
    binary = cluster.bin_dir() / "helm"
    if not binary.is_file():
        pytest.skip(f"helm is not built yet ({binary}): run hack/cluster/build")
    return binary


@pytest.fixture(scope="session")
def helm(helm_binary: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """Run helm with its own cache and config directories: ``helm("lint", str(CHART))``."""
    home = tmp_path_factory.mktemp("helm-home")

    def run(
        *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": "/usr/bin:/bin",
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }
        completed = subprocess.run(
            [str(helm_binary), *args],
            capture_output=True,
            text=True,
            env=environment,
            timeout=timeout,
            check=False,
        )
        if check and completed.returncode != 0:
            raise AssertionError(
                f"helm {' '.join(args)} exited {completed.returncode}:\n{completed.stderr}"
            )
        return completed

    return run


@pytest.fixture(scope="session")
def render(
    helm: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Any]:
    """``render(values, namespace=...)``: the chart's objects (hooks included) as dicts."""
    directory = tmp_path_factory.mktemp("values")

    def run(values: dict[str, Any] | None = None, *, namespace: str = "sundial") -> list[Any]:
        arguments = ["template", "release", str(CHART), "--namespace", namespace]
        if values:
            path = directory / f"values-{len(list(directory.iterdir()))}.yaml"
            path.write_text(yaml.safe_dump(values))
            arguments += ["--values", str(path)]
        output = helm(*arguments).stdout
        return [document for document in yaml.safe_load_all(output) if document]

    return run
