"""``sundial exec``'s logic, called in-process; the real child process is in integration."""

from __future__ import annotations

import json
import pathlib
from datetime import UTC, datetime, timedelta

import pytest

from sundial.runner import exec_command

MODULES = ["handlers.sample_jobs"]


def run(handler: str, args: object = None, **environ: str) -> int:
    text = None if args is None else json.dumps(args)
    return exec_command.run(handler, MODULES, args_text=text, environ=environ)


def test_success_and_context_from_the_environment(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "ctx"
    code = run(
        "sample.echo_context",
        {"out": str(out), "n": 5},
        SUNDIAL_RUN_ID="r7",
        SUNDIAL_ATTEMPT="2",
        SUNDIAL_IDEMPOTENCY_KEY="idem",
        SUNDIAL_FIRE_TIME="2026-01-01T00:00:00+00:00",
        SUNDIAL_NAMESPACE="team-a",
    )
    assert code == exec_command.EXIT_SUCCEEDED
    assert out.read_text() == "r7|2|idem|2026-01-01 00:00:00+00:00|5|team-a"


def test_the_fencing_token_comes_from_the_environment_and_defaults_to_the_attempt(
    tmp_path: pathlib.Path,
) -> None:
    out = tmp_path / "token"
    token = (7 << 32) | 2  # epoch 7 of a hot queue, attempt 2
    env = exec_command.environment_for(
        run_id="r", attempt=2, fencing_token=token, idempotency_key="k", fire_time=None, args={}
    )
    assert env["SUNDIAL_FENCING_TOKEN"] == str(token)
    assert run("sample.echo_token", {"out": str(out)}, **env) == exec_command.EXIT_SUCCEEDED
    assert out.read_text() == f"2 {token}"
    assert run("sample.echo_token", {"out": str(out)}, SUNDIAL_ATTEMPT="4") == 0
    assert out.read_text() == "4 4"
    bad = run("sample.echo_token", {"out": str(out)}, SUNDIAL_FENCING_TOKEN="1e9")
    assert bad == exec_command.EXIT_BAD_ENVIRONMENT


def test_a_raising_handler_exits_1_with_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("sample.sub_fail") == exec_command.EXIT_FAILED
    assert "RuntimeError: subprocess handler exploded" in capsys.readouterr().err


def test_async_handlers_run_too() -> None:
    assert run("sample.sub_async_ok") == exec_command.EXIT_SUCCEEDED


@pytest.mark.parametrize(
    ("args_text", "reason"),
    [
        ('{"day": "not a date", "pages": 1}', "day"),
        ("[1, 2]", "JSON object"),
        ("{not json", "Expecting property name"),
        ("x" * (exec_command.MAX_INPUT_BYTES + 1), "larger than"),
    ],
)
def test_bad_args_exit_3(args_text: str, reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = exec_command.run("sample.report", MODULES, args_text=args_text, environ={})
    assert code == exec_command.EXIT_BAD_ARGS
    assert reason in capsys.readouterr().err


def test_unknown_handler_exits_4_and_bad_module_exits_5() -> None:
    assert run("nope.nothing") == exec_command.EXIT_UNKNOWN_HANDLER
    code = exec_command.run("x", ["no_such_module_here"], args_text=None, environ={})
    assert code == exec_command.EXIT_HANDLERS_IMPORT_FAILED


def test_bad_environment_exits_6() -> None:
    assert run("sample.sub_async_ok", SUNDIAL_ATTEMPT="two") == exec_command.EXIT_BAD_ENVIRONMENT
    code = run("sample.sub_async_ok", SUNDIAL_FIRE_TIME="yesterday")
    assert code == exec_command.EXIT_BAD_ENVIRONMENT


def test_the_run_times_reach_the_handler_through_the_environment() -> None:
    fire = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
    env = exec_command.environment_for(
        run_id="r",
        attempt=2,
        idempotency_key="k",
        fire_time=fire,
        args={},
        run_at=fire + timedelta(seconds=30),
        started_at=fire + timedelta(seconds=31, milliseconds=250),
    )
    identity = exec_command._identity(env)
    assert (identity["fire_time"], identity["run_at"], identity["started_at"]) == (
        fire,
        fire + timedelta(seconds=30),
        fire + timedelta(seconds=31, milliseconds=250),
    )
    assert run("sample.sub_async_ok", SUNDIAL_RUN_AT="soon") == exec_command.EXIT_BAD_ENVIRONMENT
    no_times = exec_command._identity({})
    assert (no_times["run_at"], no_times["started_at"]) == (None, None)


def test_environment_for_round_trips_through_the_reader(tmp_path: pathlib.Path) -> None:
    env = exec_command.environment_for(
        run_id="r", attempt=9, idempotency_key="k", fire_time=None, args={"a": 1}
    )
    assert env["SUNDIAL_ATTEMPT"] == "9" and "SUNDIAL_FIRE_TIME" not in env
    assert exec_command.read_args(None, env) == '{"a": 1}'
    file = tmp_path / "args.json"
    file.write_text('{"b": 2}')
    assert exec_command.read_args(str(file), env) == '{"b": 2}'
