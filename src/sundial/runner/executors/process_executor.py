"""Runs plain ``def`` handlers in a pool of spawned worker processes, for CPU-bound work.

Guarantees:
- A worker that dies (``os._exit``, a segfault, the OOM killer) breaks the pool
  (``BrokenProcessPool``). The pool is rebuilt and the attempt ends ``Crashed``. Each worker
  reports which attempt it is running, so the crash is pinned on the handler whose process
  died (``ProcessCrashed``, counted in ``crash_counts`` for quarantine-after-N); attempts that
  merely shared the broken pool end ``Crashed`` with ``PoolRestarted`` and count nothing.
- A timeout or a cancellation kills the pool's workers and rebuilds the pool: a process, unlike
  a thread, can be stopped for good. Other attempts in that pool end ``PoolRestarted``.
- Workers die with the runner, ``kill -9`` included (``lifeline.die_with_parent``). Workers are
  spawned by the first ``submit``, on the event loop's thread, which the parent-death signal
  is tied to.

``concurrent.futures`` on Python 3.11 has no public way to kill its workers, so this module
reads the pool's ``_processes``; Python 3.14 adds ``kill_workers()`` for the same purpose.
"""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import multiprocessing.queues
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from typing import Any

from sundial.runner import context, invocation, lifeline, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base

_started: multiprocessing.queues.SimpleQueue[tuple[str, int]] | None = None


def _initialize_worker(
    started: multiprocessing.queues.SimpleQueue[tuple[str, int]], parent_pid: int
) -> None:
    global _started
    # First: a worker must never outlive its runner (kill -9 included); see lifeline.
    lifeline.die_with_parent(parent_pid)
    _started = started


def _run_in_worker(
    token: str,
    function: Callable[..., Any],
    args: Any,
    handler: str,
    run_id: str,
    attempt: int,
    idempotency_key: str,
    fire_time: datetime | None,
    namespace: str | None = None,
    run_at: datetime | None = None,
    started_at: datetime | None = None,
    fencing_token: int | None = None,
) -> str | None:
    if _started is not None:
        _started.put((token, os.getpid()))
    ctx = context.make(
        handler=handler,
        run_id=run_id,
        attempt=attempt,
        idempotency_key=idempotency_key,
        fire_time=fire_time,
        # Nothing sets it: a process attempt is stopped by killing its worker.
        cancel_event=threading.Event(),
        namespace=namespace,
        run_at=run_at,
        started_at=started_at,
        fencing_token=fencing_token,
    )
    return base.call_sync(function, args, ctx)


class _Pool:
    """One generation of the process pool and what we learnt about its workers."""

    def __init__(self, mp_context: multiprocessing.context.SpawnContext, max_workers: int):
        self.started: multiprocessing.queues.SimpleQueue[tuple[str, int]] = mp_context.SimpleQueue()
        self.executor = ProcessPoolExecutor(
            max_workers=max_workers,
            mp_context=mp_context,
            initializer=_initialize_worker,
            initargs=(self.started, os.getpid()),
        )
        # Start every worker at the first submit instead of one per submit: a worker spawned
        # by a submit while the pool is breaking is missed by the pool's own terminate-all,
        # and its manager thread then joins that live worker forever (CPython 3.11).
        self.executor._safe_to_dynamically_spawn_children = False  # type: ignore[attr-defined]
        self.processes: dict[int, multiprocessing.process.BaseProcess] = {}
        self.pid_of: dict[str, int] = {}
        self.killed_by_us = False
        self.killed_pids: set[int] = set()
        self._queue_lock = threading.Lock()
        self._queue_closed = False

    def note_processes(self) -> None:
        self.processes.update(getattr(self.executor, "_processes", None) or {})

    def drain_started(self) -> None:
        with self._queue_lock:
            if self._queue_closed:
                return
            while not self.started.empty():
                token, pid = self.started.get()
                self.pid_of[token] = pid

    def kill(self) -> None:
        self.killed_by_us = True
        self._kill_known()

    def _kill_known(self) -> None:
        self.note_processes()
        for pid, process in list(self.processes.items()):
            if _still_running(pid):
                self.killed_pids.add(pid)
                process.kill()

    def retire(self) -> None:
        """Blocking: end a broken or killed generation for good, whatever its workers do.

        Keeps killing every worker the pool knows of until its manager thread has finished
        cleaning up, so a straggler can never leave that thread joining a live process.
        """
        manager: threading.Thread | None = getattr(self.executor, "_executor_manager_thread", None)
        deadline = time.monotonic() + 30
        while manager is not None and manager.is_alive() and time.monotonic() < deadline:
            self._kill_known()
            manager.join(0.1)
        self.shutdown()

    def shutdown(self) -> None:
        """Blocking: joins the executor's threads and workers."""
        self.executor.shutdown(wait=True, cancel_futures=True)
        for process in self.processes.values():
            process.join(timeout=5)
        self.drain_started()
        with self._queue_lock:
            self._queue_closed = True
            self.started.close()


class ProcessExecutor:
    name = "process"

    def __init__(self, handlers: registry_module.Registry, *, max_workers: int = 2) -> None:
        self._handlers = handlers
        self._size = max_workers
        self._mp_context = multiprocessing.get_context("spawn")
        self._pool = _Pool(self._mp_context, max_workers)
        self._busy = 0
        self._crashes: collections.Counter[str] = collections.Counter()
        self._rebuilds = 0
        self._retired: set[asyncio.Task[None]] = set()

    @property
    def size(self) -> int:
        return self._size

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def crash_counts(self) -> collections.Counter[str]:
        """Crashes this handler caused, by handler name, since the executor started."""
        return collections.Counter(self._crashes)

    @property
    def rebuilds(self) -> int:
        """How many times the pool was thrown away and recreated."""
        return self._rebuilds

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        handler = prepared.handler
        pool = self._pool
        token = uuid.uuid4().hex
        try:
            future = pool.executor.submit(
                _run_in_worker,
                token,
                handler.function,
                prepared.args,
                handler.name,
                job.run_id,
                job.attempt,
                job.idempotency_key,
                job.fire_time,
                job.namespace,
                job.run_at,
                job.started_at,
                job.fencing_token,
            )
        except BrokenProcessPool:
            self._replace(pool)
            return outcomes.Crashed(
                "the process pool was broken when this attempt was submitted; it was rebuilt",
                outcomes.FailureDetail.POOL_RESTARTED,
            )
        pool.note_processes()
        self._busy += 1
        try:
            stop = await base.wait_for(
                base.bridge(future), seconds=prepared.timeout_seconds, cancel=job.cancel
            )
        except asyncio.CancelledError:
            future.cancel()
            raise
        finally:
            self._busy -= 1
        if stop is base.Stop.DONE:
            try:
                error_text = future.result()
            except BrokenProcessPool as error:
                return await self._crashed(pool, token, handler.name, error)
            except Exception as error:  # e.g. args that do not pickle
                return outcomes.Failed(base.format_exception(error))
            if error_text is None:
                return outcomes.Succeeded()
            return outcomes.Failed(error_text)
        if not future.cancel():  # running, not merely queued: only killing stops it
            pool.kill()
            self._replace(pool)
        if stop is base.Stop.CANCELLED:
            return outcomes.Cancelled("cancellation requested; the worker process was killed")
        return outcomes.TimedOut(
            f"handler {handler.name!r} did not finish within {prepared.timeout_seconds:g}s; "
            "its worker process was killed and the pool rebuilt",
            prepared.timeout_seconds,
        )

    async def _crashed(
        self, pool: _Pool, token: str, handler: str, error: BaseException
    ) -> outcomes.Crashed:
        self._replace(pool)
        pool.drain_started()
        pid = pool.pid_of.get(token)
        process = pool.processes.get(pid) if pid is not None else None
        exitcode = await asyncio.to_thread(_exit_code, process) if process is not None else None
        # After a worker dies the pool SIGTERMs the survivors and we SIGKILL stragglers; the
        # culprit is the one that died some other way (its own exit code, SIGSEGV, OOM).
        killed_by_pool_or_us = exitcode in (None, 0, -signal.SIGTERM) or (
            exitcode == -signal.SIGKILL and pid in pool.killed_pids
        )
        culprit = not pool.killed_by_us and not killed_by_pool_or_us
        if not culprit:
            return outcomes.Crashed(
                f"handler {handler!r} was running in a process pool that broke or was killed "
                "because of another job; the pool was rebuilt",
                outcomes.FailureDetail.POOL_RESTARTED,
            )
        self._crashes[handler] += 1
        return outcomes.Crashed(
            f"the worker process running handler {handler!r} died "
            f"(pid {pid}, {_describe_exit(exitcode)}); the pool was rebuilt. "
            f"{error}",
            outcomes.FailureDetail.PROCESS_CRASHED,
        )

    def _replace(self, pool: _Pool) -> None:
        """Swap in a fresh pool once per broken generation; retire the old one off-loop."""
        if self._pool is not pool:
            return
        self._pool = _Pool(self._mp_context, self._size)
        self._rebuilds += 1
        retire = asyncio.ensure_future(asyncio.to_thread(pool.retire))
        self._retired.add(retire)
        retire.add_done_callback(self._retired.discard)

    async def close(self) -> None:
        pool = self._pool
        if self._busy:
            pool.kill()
            await asyncio.to_thread(pool.retire)
        else:
            await asyncio.to_thread(pool.shutdown)
        if self._retired:
            await asyncio.gather(*self._retired, return_exceptions=True)


def _still_running(pid: int) -> bool:
    """Peek (without reaping) whether a child has not exited yet: a dead worker that is not
    reaped yet must not be "killed", or its real cause of death would be mistaken for ours."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # already reaped
        return False


def _exit_code(process: multiprocessing.process.BaseProcess) -> int | None:
    """Blocking: the worker's exit code, once it is reaped.

    The pool's own manager thread joins its workers at the same time; whichever thread's
    ``waitpid`` loses the race sees ECHILD and, for a moment, ``exitcode`` is still None
    until the winner stores it. So wait for the process, then poll for the stored code.
    """
    process.join(10)
    deadline = time.monotonic() + 10
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return process.exitcode


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "exit status unknown"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"
