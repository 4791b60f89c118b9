"""The subprocess executor with real `python -m sundial exec` children."""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest

from sundial.runner import outcomes, registry
from sundial.runner.executors import subprocess_executor
from support.invocations import invoke
from support.polling import wait_until_async


@pytest.fixture
def executor(child_env: dict[str, str]) -> subprocess_executor.SubprocessExecutor:
    return subprocess_executor.SubprocessExecutor(
        registry.default_registry, grace_seconds=0.5, extra_env=child_env
    )


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_success_with_the_run_identity_in_the_child(
    executor: subprocess_executor.SubprocessExecutor,
) -> None:
    outcome = await executor.run(invoke("sample.sub_ok", run_id="run-sub", attempt=3))
    assert outcome == outcomes.Succeeded()
    assert executor.busy == 0


async def test_a_raising_handler_fails_with_the_childs_traceback(
    executor: subprocess_executor.SubprocessExecutor,
) -> None:
    outcome = await executor.run(invoke("sample.sub_fail"))
    assert isinstance(outcome, outcomes.Failed)
    assert "RuntimeError: subprocess handler exploded" in outcome.error


async def test_bad_args_are_rejected_before_a_child_starts(
    executor: subprocess_executor.SubprocessExecutor,
) -> None:
    outcome = await executor.run(invoke("sample.sub_stubborn", {"seconds": 1}))
    assert isinstance(outcome, outcomes.Failed)
    assert outcome.detail is outcomes.FailureDetail.BAD_ARGS


async def test_timeout_kills_a_child_that_ignores_sigterm(
    executor: subprocess_executor.SubprocessExecutor, tmp_path: pathlib.Path
) -> None:
    pid_file = tmp_path / "pid"
    job = invoke("sample.sub_stubborn", {"pid_file": str(pid_file)}, timeout_seconds=3)
    running = asyncio.ensure_future(executor.run(job))
    await wait_until_async(lambda: bool(executor.child_pids))
    (pid,) = executor.child_pids
    outcome = await running
    assert isinstance(outcome, outcomes.TimedOut)
    assert "process group was killed" in outcome.error
    assert not is_alive(pid)
    if pid_file.exists():  # the handler got going before the deadline: same process
        assert int(pid_file.read_text()) == pid
    assert executor.busy == 0


async def test_cancellation_sends_sigterm_and_a_cooperative_child_exits(
    executor: subprocess_executor.SubprocessExecutor, tmp_path: pathlib.Path
) -> None:
    pid_file = tmp_path / "pid"
    job = invoke("sample.sub_cooperative", {"pid_file": str(pid_file)})
    running = asyncio.ensure_future(executor.run(job))
    await wait_until_async(lambda: pid_file.exists() and pid_file.read_text() != "")
    pid = int(pid_file.read_text())
    assert pid in executor.child_pids
    job.cancel.set()
    outcome = await running
    assert isinstance(outcome, outcomes.Cancelled)
    assert not is_alive(pid)


async def test_the_child_does_not_inherit_database_credentials(
    executor: subprocess_executor.SubprocessExecutor,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SUNDIAL_DATABASE_URL", "postgresql://runner:secret@db/sundial")
    monkeypatch.setenv("PGPASSWORD", "secret")
    monkeypatch.setenv("DATABASE_URL", "postgresql://runner:secret@db/sundial")
    out = tmp_path / "env"
    outcome = await executor.run(invoke("sample.env_probe", {"out": str(out)}))
    assert outcome == outcomes.Succeeded()
    names = set(out.read_text().split())
    assert {"SUNDIAL_DATABASE_URL", "PGPASSWORD", "DATABASE_URL"}.isdisjoint(names)
    assert {"SUNDIAL_RUN_ID", "SUNDIAL_ATTEMPT", "SUNDIAL_IDEMPOTENCY_KEY", "PATH"} <= names
