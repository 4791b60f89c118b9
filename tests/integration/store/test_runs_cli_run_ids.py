"""`sundial runs cancel|replay` with odd run ids: a usage error, never a traceback.

A run id is what `sundial runs` prints in its ID column: ASCII digits, 1 to 2**63-1 (a
PostgreSQL bigint). Anything else - negative, past bigint, other scripts' digits ('٣' is a
digit to ``int()``), whitespace, underscores, NUL, empty - is exit 2 with a message that says
what an id is; a well-formed id of no run is exit 3, as before.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sundial import cli

ODD_IDS = [
    "-1",
    "0",
    "-0",
    str(2**63),
    "9" * 40,
    "abc",
    "",
    " ",
    " 7",
    "7 ",
    "\t7",
    "1_000",
    "+5",
    "0x10",
    "1e3",
    "3.0",
    "\u0663",
    "\uff17",
    "7\x00",
    "\x00",
    "7\u200b",
]


def invoke(*args: str) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(cli.main, list(args))
    return result.exit_code, result.output, result.exception


@pytest.mark.parametrize("command", ["cancel", "replay"])
@pytest.mark.parametrize("run_id", ODD_IDS, ids=ascii)
def test_an_odd_run_id_is_a_usage_error(store_dsn: str, command: str, run_id: str) -> None:
    code, output, exception = invoke("runs", command, "--dsn", store_dsn, "--", run_id)
    assert code == 2, output
    assert isinstance(exception, SystemExit), exception
    assert "is not a run id" in output, output
    assert "Traceback" not in output


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(run_id=st.text(max_size=25) | st.integers().map(str))
def test_any_text_is_a_run_id_or_a_usage_error(store_dsn: str, run_id: str) -> None:
    code, output, exception = invoke("runs", "cancel", "--dsn", store_dsn, "--", run_id)
    canonical = run_id.isascii() and run_id.isdigit() and 1 <= int(run_id) < 2**63
    if canonical:
        assert code == cli.EXIT_NO_SUCH_RUN, output  # the database is empty
        assert f"there is no run {int(run_id)}" in output
    else:
        assert code == 2 and "is not a run id" in output, (run_id, output)
    assert isinstance(exception, SystemExit), exception


@pytest.mark.parametrize("run_id", [str(2**63 - 1), "1", "00042"])
def test_the_largest_and_padded_ids_reach_the_store(store_dsn: str, run_id: str) -> None:
    for command in ("cancel", "replay"):
        code, output, _ = invoke("runs", command, "--dsn", store_dsn, run_id)
        assert code == cli.EXIT_NO_SUCH_RUN, output
        assert f"there is no run {int(run_id)}" in output


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "cancel", "1", "--reason", "bad\x00reason"],
        ["runs", "cancel", "1", "--reason", "\x1b[31m"],
        ["runs", "--job", "default/a\x00b"],
    ],
    ids=["nul-reason", "escape-reason", "nul-job"],
)
def test_control_characters_in_other_arguments_are_usage_errors(
    store_dsn: str, args: list[str]
) -> None:
    code, output, exception = invoke(*args, "--dsn", store_dsn)
    assert code == 2, output
    assert "control characters" in output
    assert isinstance(exception, SystemExit), exception


@pytest.mark.parametrize("run_id", ["-5", str(2**64), "\u0663", " 7", ""])
def test_the_real_command_prints_no_traceback(store_dsn: str, run_id: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "sundial", "runs", "cancel", "--dsn", store_dsn, "--", run_id],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    assert "is not a run id" in completed.stderr
