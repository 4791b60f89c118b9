"""`sundial exec` as a real child process: the exit code is the outcome."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from sundial.pods import manifests
from sundial.runner import exec_command

SUNDIAL_EXEC = [sys.executable, "-m", "sundial", "exec"]


def sundial_exec(
    child_env: dict[str, str], *argv: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **child_env, **env}
    return subprocess.run(
        [*SUNDIAL_EXEC, *argv],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "env", "code"),
    [
        (["sample.sub_async_ok"], {}, exec_command.EXIT_SUCCEEDED),
        (["sample.sub_fail"], {}, exec_command.EXIT_FAILED),
        (["sample.report"], {"SUNDIAL_ARGS": '{"day": "tomorrow"}'}, exec_command.EXIT_BAD_ARGS),
        (["os.system"], {}, exec_command.EXIT_UNKNOWN_HANDLER),
    ],
)
def test_exit_codes(
    child_env: dict[str, str], argv: list[str], env: dict[str, str], code: int
) -> None:
    result = sundial_exec(child_env, *argv, "--handlers", "handlers.sample_jobs", **env)
    assert result.returncode == code, result.stderr


def test_args_file_and_run_identity(child_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    out = tmp_path / "ctx"
    args = tmp_path / "args.json"
    args.write_text(f'{{"out": "{out}", "n": 1}}')
    result = sundial_exec(
        child_env,
        "sample.echo_context",
        "--handlers",
        "handlers.sample_jobs",
        "--args-file",
        str(args),
        SUNDIAL_RUN_ID="42",
        SUNDIAL_ATTEMPT="3",
        SUNDIAL_IDEMPOTENCY_KEY="abc",
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text() == "42|3|abc|None|1"


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_handler_log_lines_reach_stdout_as_json(child_env: dict[str, str]) -> None:
    """What `kubectl logs` shows of a handler Pod: the handler's own lines, with the run's keys."""
    result = sundial_exec(
        child_env,
        "sample.sub_logs",
        "--handlers",
        "handlers.sample_jobs",
        SUNDIAL_RUN_ID="77",
        SUNDIAL_ATTEMPT="2",
    )
    assert result.returncode == 0, result.stderr
    lines = json_lines(result.stdout)
    assert [(line["level"], line["message"]) for line in lines] == [
        ("info", "starting the report"),
        ("warning", "page 2 is empty"),
    ]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys()
        assert (line["run_id"], line["attempt"], line["handler"]) == ("77", 2, "sample.sub_logs")
        assert str(line["logger"]).endswith("sample.sub_logs")
    assert lines[0]["pages"] == 3
    # stderr carries only failure reasons (the subprocess executor keeps its tail as the error)
    assert result.stderr == ""


def test_log_level_and_failure_reason_stay_apart(child_env: dict[str, str]) -> None:
    result = sundial_exec(
        child_env,
        "sample.sub_async_logs",
        "--handlers",
        "handlers.sample_jobs",
        SUNDIAL_LOG_LEVEL="WARNING",
    )
    assert result.returncode == exec_command.EXIT_FAILED
    assert json_lines(result.stdout) == []
    assert "failed after logging" in result.stderr
    assert "async hello" not in result.stderr

    result = sundial_exec(child_env, "sample.sub_async_logs", "--handlers", "handlers.sample_jobs")
    assert [line["message"] for line in json_lines(result.stdout)] == ["async hello"]


def test_missing_handlers_option_is_a_usage_error(child_env: dict[str, str]) -> None:
    result = sundial_exec(child_env, "sample.sub_ok")
    assert result.returncode == exec_command.EXIT_USAGE
    assert "--handlers" in result.stderr


def test_sigterm_cancels_a_cooperative_handler_with_exit_143(
    child_env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    pid_file = tmp_path / "pid"
    child = subprocess.Popen(
        [*SUNDIAL_EXEC, "sample.sub_cooperative", "--handlers", "handlers.sample_jobs"],
        env={**os.environ, **child_env, "SUNDIAL_ARGS": f'{{"pid_file": "{pid_file}"}}'},
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()):  # the handler is running
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.02)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == exec_command.EXIT_CANCELLED
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_handler_pod_runs_its_command_as_written(
    child_env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    """A handler job with executionModel pod: the container's command and environment, taken
    from the launcher's manifest unchanged, run the handler. The image names the handler
    modules with SUNDIAL_HANDLERS (runner/Dockerfile), since the command cannot."""
    out = tmp_path / "ctx"
    spec = manifests.LaunchSpec(
        run_id=42,
        attempt=3,
        job_id="4f1c2b7e-0000-4000-8000-000000000001",
        job_namespace="team-a",
        job_name="echo",
        handler="sample.echo_context",
        template={},
        args={"out": str(out), "n": 7},
        idempotency_key="run:42",
        fire_time=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
        timeout_seconds=60,
    )
    (container,) = manifests.pod_manifest(spec, manifests.ManifestSettings())["spec"]["containers"]
    executable = pathlib.Path(sys.executable).parent / container["command"][0]
    pod_env = {variable["name"]: variable["value"] for variable in container["env"]}
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("SUNDIAL_")}
    result = subprocess.run(
        [str(executable), *container["command"][1:]],
        env={**inherited, **child_env, "SUNDIAL_HANDLERS": "handlers.sample_jobs", **pod_env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == exec_command.EXIT_SUCCEEDED, result.stderr
    assert out.read_text() == "42|3|run:42|2026-11-29 12:00:00+00:00|7|team-a"
