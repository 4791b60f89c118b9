"""Runs a handler in its own child process (``python -m sundial exec``), for long or
untrusted work that must be killable.

The child gets a new session, so SIGTERM and SIGKILL reach its whole process group,
grandchildren included. On timeout or cancellation the group gets SIGTERM (the handler's
cancellation event is set and it may clean up), then SIGKILL after the handler's
``kill_grace_seconds`` (``@sundial.job(kill_grace_seconds=...)``), else ``grace_seconds``. The
child's exit code (see ``exec_command``) becomes the outcome; the tail of its stderr becomes
the error text.

The child dies with the runner, ``kill -9`` included: it reads a pipe whose write end only the
runner holds (``lifeline``) and SIGKILLs its process group when the pipe closes.

The child does not inherit the runner's database credentials: variables the runner is
configured with (``SUNDIAL_*``), libpq's (``PG*``) and ``DATABASE_URL`` are dropped before the
run's own ``SUNDIAL_*`` variables are added (docs/design.md: jobs get no credentials).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

from sundial.api import error_text
from sundial.runner import exec_command, invocation, lifeline, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base

STDERR_TAIL_BYTES = 16_000


def is_runner_secret(name: str) -> bool:
    """The default filter for variables a child must not inherit from the runner."""
    return name.startswith(("SUNDIAL_", "PG")) or name == "DATABASE_URL"


class SubprocessExecutor:
    name = "subprocess"

    def __init__(
        self,
        handlers: registry_module.Registry,
        *,
        max_concurrency: int = 16,
        grace_seconds: float = 10.0,
        python: str = sys.executable,
        extra_env: Mapping[str, str] | None = None,
        handler_modules: Sequence[str] | None = None,
        withhold_env: Callable[[str], bool] = is_runner_secret,
    ) -> None:
        self._handlers = handlers
        self._size = max_concurrency
        self._grace_seconds = grace_seconds
        self._python = python
        self._extra_env = dict(extra_env or {})
        self._handler_modules = tuple(handler_modules or ())
        self._withhold_env = withhold_env
        self._children: dict[int, asyncio.subprocess.Process] = {}
        self._lifeline: lifeline.Lifeline | None = None

    @property
    def size(self) -> int:
        return self._size

    @property
    def busy(self) -> int:
        return len(self._children)

    @property
    def child_pids(self) -> list[int]:
        return list(self._children)

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        handler = prepared.handler
        modules = self._handler_modules or (handler.module,)
        command = [self._python, "-m", "sundial", "exec", handler.name]
        for module in modules:
            command += ["--handlers", module]
        env = {name: value for name, value in os.environ.items() if not self._withhold_env(name)}
        env.update(self._extra_env)
        env.update(
            exec_command.environment_for(
                run_id=job.run_id,
                attempt=job.attempt,
                fencing_token=job.fencing_token,
                idempotency_key=job.idempotency_key,
                fire_time=job.fire_time,
                args=job.args,
                namespace=job.namespace,
                run_at=job.run_at,
                started_at=job.started_at,
            )
        )
        if self._lifeline is None:
            self._lifeline = lifeline.Lifeline()
        env[lifeline.ENV_FD] = str(self._lifeline.read_fd)
        child = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            pass_fds=(self._lifeline.read_fd,),
        )
        self._children[child.pid] = child
        stderr_tail = bytearray()
        reader = asyncio.ensure_future(_read_tail(child, stderr_tail))
        try:
            exited = asyncio.ensure_future(child.wait())
            try:
                stop = await base.wait_for(
                    exited, seconds=prepared.timeout_seconds, cancel=job.cancel
                )
            finally:
                if not exited.done():
                    grace = handler.kill_grace_seconds
                    await asyncio.shield(self._stop(child, grace))
                await exited
                await reader
        finally:
            self._children.pop(child.pid, None)
        error = stderr_tail.decode(errors="replace").strip()
        if stop is base.Stop.CANCELLED:
            return outcomes.Cancelled(_join("cancellation requested; the child was stopped", error))
        if stop is base.Stop.TIMED_OUT:
            return outcomes.TimedOut(
                _join(
                    f"handler {handler.name!r} did not finish within "
                    f"{prepared.timeout_seconds:g}s; its process group was killed",
                    error,
                ),
                prepared.timeout_seconds,
            )
        return _outcome_of(child.returncode, handler.name, error)

    async def _stop(self, child: asyncio.subprocess.Process, grace: float | None = None) -> None:
        _signal_group(child.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(child.wait(), self._grace_seconds if grace is None else grace)
        except TimeoutError:
            _signal_group(child.pid, signal.SIGKILL)
            await child.wait()
        else:
            # The leader exited on SIGTERM; do not leave its grandchildren behind.
            _signal_group(child.pid, signal.SIGKILL)

    async def close(self) -> None:
        if self._children:
            await asyncio.gather(
                *(self._stop(child) for child in list(self._children.values())),
                return_exceptions=True,
            )
        if self._lifeline is not None:
            self._lifeline.close()
            self._lifeline = None


def _outcome_of(returncode: int | None, handler: str, error: str) -> outcomes.Outcome:
    if returncode == exec_command.EXIT_SUCCEEDED:
        return outcomes.Succeeded()
    if returncode == exec_command.EXIT_BAD_ARGS:
        return outcomes.Failed(error, outcomes.FailureDetail.BAD_ARGS)
    if returncode == exec_command.EXIT_UNKNOWN_HANDLER:
        return outcomes.Failed(error, outcomes.FailureDetail.UNKNOWN_HANDLER)
    if returncode == exec_command.EXIT_CANCELLED:
        return outcomes.Cancelled(_join("the child exited on SIGTERM", error))
    if returncode is not None and returncode < 0:
        return outcomes.Crashed(
            _join(f"the child running {handler!r} was killed by signal {-returncode}", error)
        )
    return outcomes.Failed(_join(f"the child running {handler!r} exited {returncode}", error))


def _join(reason: str, stderr: str) -> str:
    return error_text.truncate(f"{reason}\n{stderr}" if stderr else reason)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


async def _read_tail(child: asyncio.subprocess.Process, tail: bytearray) -> None:
    assert child.stderr is not None
    while chunk := await child.stderr.read(65536):
        tail.extend(chunk)
        if len(tail) > STDERR_TAIL_BYTES:
            del tail[: len(tail) - STDERR_TAIL_BYTES]
