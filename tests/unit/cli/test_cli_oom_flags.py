"""The installation-wide OOM memory bump is set on the command line of both Pod launchers:
``sundial operator`` and ``sundial pod-launcher`` (``--oom-memory-increase-percent``,
``--oom-max-memory``), and a bad value is a usage error that says what to write."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.pods import manifests

COMMANDS = {
    "operator": ["operator", "--dsn", "postgresql://unused/x", "--liveness-port", "0"],
    "pod-launcher": ["pod-launcher", "--dsn", "postgresql://unused/x"],
}


class _Built(Exception):
    """Raised by the recording ManifestSettings: the command got as far as its settings."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[manifests.ManifestSettings]:
    """The ManifestSettings a command builds; the command stops right there."""
    seen: list[manifests.ManifestSettings] = []
    real = manifests.ManifestSettings

    def record(**fields: Any) -> manifests.ManifestSettings:
        seen.append(real(**fields))
        raise _Built

    monkeypatch.setattr(manifests, "ManifestSettings", record)
    # pod-launcher loads a kubeconfig before it builds its settings.
    monkeypatch.setattr(
        "kubernetes.config.new_client_from_config", lambda **_: _FakeClient(), raising=True
    )
    return seen


class _FakeClient:
    def close(self) -> None:
        pass


@pytest.mark.parametrize("command", COMMANDS)
def test_the_oom_flags_become_the_installation_default_bump(
    command: str, built: list[manifests.ManifestSettings]
) -> None:
    arguments = [*COMMANDS[command], "--oom-memory-increase-percent", "50"]
    result = CliRunner().invoke(cli.main, [*arguments, "--oom-max-memory", "1.5Gi"])

    assert isinstance(result.exception, _Built), result.output
    [settings] = built
    assert settings.oom_memory_factor == 1.5
    assert settings.oom_memory_cap_bytes == 1536 * 1024**2


@pytest.mark.parametrize("command", COMMANDS)
def test_without_the_flags_there_is_no_bump_and_the_cap_is_8gi(
    command: str, built: list[manifests.ManifestSettings]
) -> None:
    result = CliRunner().invoke(cli.main, COMMANDS[command])

    assert isinstance(result.exception, _Built), result.output
    [settings] = built
    assert (settings.oom_memory_factor, settings.oom_memory_cap_bytes) == (1.0, 8 * 1024**3)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("quantity", ["8GB", "-1Gi", "100m", "0", "lots"])
def test_a_max_memory_that_is_not_a_positive_quantity_is_a_usage_error(
    command: str, quantity: str, built: list[manifests.ManifestSettings]
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], "--oom-max-memory", quantity])

    assert result.exit_code == 2, result.output
    assert "--oom-max-memory" in result.output
    assert "write it like 512Mi or 8Gi" in result.output
    assert built == []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("percent", ["-1", "1001", "half"])
def test_an_increase_percent_outside_0_to_1000_is_a_usage_error(
    command: str, percent: str, built: list[manifests.ManifestSettings]
) -> None:
    arguments = [*COMMANDS[command], "--oom-memory-increase-percent", percent]
    result = CliRunner().invoke(cli.main, arguments)

    assert result.exit_code == 2, result.output
    assert "--oom-memory-increase-percent" in result.output
    assert built == []
