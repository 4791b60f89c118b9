"""Fixtures for the chart's tests: the chart rendered by helm (``render``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from support.chart import CHART, RENDER_FOR_THE_TEST_CLUSTER


@pytest.fixture(scope="session")
def render(
    helm: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Any]:
    """``render(values, namespace=...)``: the chart's objects (hooks included) as dicts."""
    directory = tmp_path_factory.mktemp("values")

    def run(values: dict[str, Any] | None = None, *, namespace: str = "sundial") -> list[Any]:
        arguments = ["template", "release", str(CHART), "--namespace", namespace]
        arguments += RENDER_FOR_THE_TEST_CLUSTER
        if values:
            path = directory / f"values-{len(list(directory.iterdir()))}.yaml"
            path.write_text(yaml.safe_dump(values))
            arguments += ["--values", str(path)]
        output = helm(*arguments).stdout
        return [document for document in yaml.safe_load_all(output) if document]

    return run
