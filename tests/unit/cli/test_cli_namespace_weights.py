"""``sundial runner --namespace-weight NAMESPACE=WEIGHT``: a namespace's share of the slots (and
``sundial pod-launcher --namespace-weight``: of the Pods). The weights reach the settings; a bad
value is a usage error that says what to write, before the runner loads handlers or connects."""

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
    # Handlers as if a module had registered one, so the runner gets as far as its settings.
    from sundial.runner import registry

    monkeypatch.setattr(registry, "load_handlers", lambda modules: ["one handler"])
    return seen


def test_weights_reach_the_runners_settings(built: list[worker.Settings]) -> None:
    args = [*RUNNER, "--namespace-weight", "team-a=3", "--namespace-weight", "team-b=0.5,team-c=2"]
    CliRunner().invoke(cli.main, args)
    [settings] = built
    assert settings.namespace_weights == {"team-a": 3.0, "team-b": 0.5, "team-c": 2.0}


def test_no_weights_by_default(built: list[worker.Settings]) -> None:
    CliRunner().invoke(cli.main, RUNNER)
    [settings] = built
    assert settings.namespace_weights == {}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("team-a", "'team-a' is not NAMESPACE=WEIGHT: write e.g. team-a=3"),
        ("Team_A=2", "'Team_A=2' is not NAMESPACE=WEIGHT"),
        ("team-a=0", "the weight of 'team-a' is '0': write a number above 0"),
        ("team-a=-1", "the weight of 'team-a' is '-1'"),
        ("team-a=lots", "the weight of 'team-a' is 'lots'"),
        ("team-a=inf", "the weight of 'team-a' is 'inf'"),
        ("team-a=1,team-a=2", "'team-a' is weighed twice"),
    ],
)
def test_bad_weights_are_usage_errors(value: str, says: str, built: list[worker.Settings]) -> None:
    result = CliRunner().invoke(cli.main, [*RUNNER, "--namespace-weight", value])
    assert result.exit_code == 2, result.output
    assert says in result.output, result.output
    assert not built


def test_the_pod_launchers_weights_reach_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from sundial.pods import launcher

    seen: list[launcher.LauncherSettings] = []
    real = launcher.LauncherSettings

    def record(**fields: Any) -> launcher.LauncherSettings:
        seen.append(real(**fields))
        raise _Built

    monkeypatch.setattr(launcher, "LauncherSettings", record)
    from kubernetes import config as kube_config

    monkeypatch.setattr(kube_config, "new_client_from_config", lambda **_: object())
    args = ["pod-launcher", "--dsn", "postgresql://unused/x", "--kubeconfig", "unused"]
    CliRunner().invoke(cli.main, [*args, "--namespace-weight", "team-a=3"])
    bad = CliRunner().invoke(cli.main, [*args, "--namespace-weight", "team-a=0"])
    [settings] = seen
    assert settings.namespace_weights == {"team-a": 3.0}
    assert bad.exit_code == 2 and "the weight of 'team-a' is '0'" in bad.output
