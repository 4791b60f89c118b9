"""``sundial runner --metrics-port``: the default is the runner's own port, distinct from the
operator's, and only the default may move to a free port when it is taken; a port given on the
command line is held to (a taken one is an error, tested with real processes in
tests/integration/runner_loop/test_metrics_port.py)."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.runner import worker

RUNNER = ["runner", "--dsn", "postgresql://unused/x", "--handlers", "json"]


class _Built(Exception):
    pass


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[worker.Settings]:
    seen: list[worker.Settings] = []
    real = worker.Settings

    def record(**fields: Any) -> worker.Settings:
        seen.append(real(**fields))
        raise _Built

    monkeypatch.setattr(worker, "Settings", record)
    from sundial.runner import registry

    monkeypatch.setattr(registry, "load_handlers", lambda modules: ["one handler"])
    return seen


@pytest.mark.parametrize(
    ("args", "port", "fallback"),
    [
        ([], worker.DEFAULT_METRICS_PORT, True),
        (["--metrics-port", "9000"], 9000, False),
        (["--metrics-port", str(worker.DEFAULT_METRICS_PORT)], worker.DEFAULT_METRICS_PORT, False),
        (["--metrics-port", "0"], 0, False),
        (["--metrics-port", "-1"], None, False),
    ],
)
def test_the_port_and_whether_it_may_move(
    args: list[str], port: int | None, fallback: bool, built: list[worker.Settings]
) -> None:
    CliRunner().invoke(cli.main, [*RUNNER, *args])
    [settings] = built
    assert (settings.metrics_port, settings.metrics_port_fallback) == (port, fallback)


def test_the_default_is_not_the_operators_port_and_the_help_names_it() -> None:
    assert worker.DEFAULT_METRICS_PORT != 8080  # the operator's liveness and metrics port
    result = CliRunner().invoke(cli.main, ["runner", "--help"], terminal_width=200)
    assert f"Default: {worker.DEFAULT_METRICS_PORT}" in " ".join(result.output.split())
