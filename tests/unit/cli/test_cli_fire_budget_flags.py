"""The fire budget is set on both processes that can lead the trigger loop, ``sundial operator``
and ``sundial scheduler``: ``--fires-per-second`` in all and ``--namespace-fires-per-second`` for
one namespace. A bad value is a usage error that says what to write, before anything connects."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.scheduler import trigger

COMMANDS = {
    "operator": ["operator", "--dsn", "postgresql://unused/x", "--liveness-port", "0"],
    "scheduler": ["scheduler", "--dsn", "postgresql://unused/x"],
}


class _Built(Exception):
    """Raised by the recording TriggerSettings: the command got as far as its settings."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[trigger.TriggerSettings]:
    seen: list[trigger.TriggerSettings] = []
    real = trigger.TriggerSettings

    def record(**fields: Any) -> trigger.TriggerSettings:
        seen.append(real(**fields))
        raise _Built

    monkeypatch.setattr(trigger, "TriggerSettings", record)
    # The operator builds its TriggerSettings in runtime.serve, after the config.
    from sundial.operator import runtime

    async def serve(config: runtime.OperatorConfig) -> int:
        record(
            fires_per_second=config.fires_per_second,
            namespace_fires_per_second=config.namespace_fires_per_second,
        )
        return 0

    monkeypatch.setattr(runtime, "serve", serve)
    return seen


@pytest.mark.parametrize("command", COMMANDS)
def test_both_rates_reach_the_trigger_loop(
    command: str, built: list[trigger.TriggerSettings]
) -> None:
    args = [*COMMANDS[command], "--fires-per-second", "600", "--namespace-fires-per-second", "75"]
    CliRunner().invoke(cli.main, args)
    [settings] = built
    assert (settings.fires_per_second, settings.namespace_fires_per_second) == (600, 75)


@pytest.mark.parametrize("command", COMMANDS)
def test_by_default_one_global_rate_and_none_per_namespace(
    command: str, built: list[trigger.TriggerSettings]
) -> None:
    CliRunner().invoke(cli.main, COMMANDS[command])
    [settings] = built
    assert (settings.fires_per_second, settings.namespace_fires_per_second) == (1000, None)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--namespace-fires-per-second", "0"], "0.0 is not in the range x>0"),
        (["--namespace-fires-per-second", "many"], "'many' is not a valid float"),
        (["--fires-per-second", "-5"], "-5"),
        (
            ["--fires-per-second", "0", "--namespace-fires-per-second", "10"],
            "--namespace-fires-per-second needs a fire budget",
        ),
    ],
)
def test_bad_rates_are_usage_errors_that_say_what_to_write(
    command: str, flags: list[str], says: str, built: list[trigger.TriggerSettings]
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], *flags])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not built


def test_the_retired_burst_flag_is_accepted_with_a_warning(
    built: list[trigger.TriggerSettings],
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS["scheduler"], "--fire-burst", "50"])
    assert "--fire-burst has no effect any more" in result.output
    assert len(built) == 1
