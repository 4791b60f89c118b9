"""The maintainer's knobs on ``sundial scheduler`` and ``sundial operator``
(``--hot-window``, ``--archive-retention-days``, ``--retention-interval``, ``--key-retention``)
and the runner's opt-in ``--maintenance``:
good values reach the settings, bad ones are usage errors that say what to write."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.scheduler import maintainer

COMMANDS = {
    "scheduler": ["scheduler", "--dsn", "postgresql://unused/x"],
    "operator": ["operator", "--dsn", "postgresql://unused/x", "--liveness-port", "0"],
}


class _Built(Exception):
    """Raised by the recording MaintainerSettings: the command got as far as its settings."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[maintainer.MaintainerSettings]:
    seen: list[maintainer.MaintainerSettings] = []
    real = maintainer.MaintainerSettings

    def record(**kwargs: object) -> maintainer.MaintainerSettings:
        seen.append(real(**kwargs))  # type: ignore[arg-type]
        raise _Built

    monkeypatch.setattr(maintainer, "MaintainerSettings", record)
    return seen


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "window", "retention"),
    [
        ([], timedelta(hours=1), timedelta(days=30)),
        (["--hot-window", "90s"], timedelta(seconds=90), timedelta(days=30)),
        (["--hot-window", "30m", "--archive-retention-days", "7"], timedelta(minutes=30),
         timedelta(days=7)),
        (["--hot-window", "2d", "--archive-retention-days", "0"], timedelta(days=2), None),
        (["--hot-window", "45"], timedelta(seconds=45), timedelta(days=30)),
    ],
)  # fmt: skip
def test_the_flags_reach_the_maintainer(
    built: list[maintainer.MaintainerSettings],
    command: str,
    flags: list[str],
    window: timedelta,
    retention: timedelta | None,
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], *flags])
    assert isinstance(result.exception, _Built), result.output
    [settings] = built
    assert (settings.hot_window, settings.archive_retention) == (window, retention)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "interval", "keys"),
    [
        ([], timedelta(hours=1), timedelta(days=7)),
        (["--retention-interval", "5m", "--key-retention", "2d"], timedelta(minutes=5),
         timedelta(days=2)),
        (["--key-retention", "0"], timedelta(hours=1), None),
        (["--key-retention", "36h"], timedelta(hours=1), timedelta(hours=36)),
    ],
)  # fmt: skip
def test_the_retention_interval_and_the_key_retention_reach_the_maintainer(
    built: list[maintainer.MaintainerSettings],
    command: str,
    flags: list[str],
    interval: timedelta,
    keys: timedelta | None,
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], *flags])
    assert isinstance(result.exception, _Built), result.output
    [settings] = built
    assert (settings.retention_interval, settings.key_retention) == (interval, keys)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--hot-window", "soon"], "write a number of seconds, or a number with s, m, h or d"),
        (["--hot-window", "-5m"], "'-5m' is negative"),
        (["--hot-window", "1w"], "is not a duration"),
        (["--archive-retention-days", "-1"], "-1 is not in the range x>=0"),
        (["--hot-window", "31d"], "must be shorter than --archive-retention-days (30 days)"),
        (["--key-retention", "a week"], "is not a duration"),
        (["--retention-interval", "-1h"], "'--retention-interval': '-1h' is negative"),
        (["--retention-interval", "0"], "'--retention-interval': '0' is not more than 0"),
        (["--retention-interval", "0s"], "write a duration such as 1h (the default) or 5m"),
        (["--hot-window", "-1"], "'--hot-window': '-1' is negative: write a duration such as"),
        (["--key-retention", "-7d"], "'--key-retention': '-7d' is negative"),
        (["--retention-interval", "nan"], "is not a duration"),
    ],
)
def test_bad_values_are_usage_errors_that_say_what_to_write(
    command: str, flags: list[str], says: str
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], *flags])
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.output.split())


def test_the_runner_refuses_a_maintenance_interval_without_maintenance() -> None:
    result = CliRunner().invoke(
        cli.main,
        [
            "runner",
            "--dsn",
            "postgresql://unused/x",
            "--handlers",
            "x",
            "--maintenance-seconds",
            "2",
        ],
    )
    assert result.exit_code == 2
    assert "add --maintenance" in " ".join(result.output.split())


@pytest.mark.parametrize("interval", ["retention_interval", "reap_interval", "poll_interval"])
@pytest.mark.parametrize("length", [timedelta(0), timedelta(seconds=-1)])
def test_the_maintainer_refuses_an_interval_that_is_not_positive(
    interval: str, length: timedelta
) -> None:
    with pytest.raises(ValueError, match=f"{interval} must be positive"):
        maintainer.MaintainerSettings(**{interval: length})  # type: ignore[arg-type]
