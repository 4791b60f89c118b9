"""Runs plain ``def`` handlers in a thread pool, for blocking I/O libraries.

Python cannot kill a thread. When an attempt times out (or is cancelled) it is reported at
once as ``TimedOut`` (``Cancelled``) and its context's cancellation event is set, but the
thread keeps its pool slot until the handler actually returns. Such slots are counted in
``leaked`` so saturation is visible and the claim loop can size its claims to what is really
free (``size - busy``). Work that may hang for good belongs in the subprocess executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from sundial.runner import context, invocation, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base


class ThreadExecutor:
    name = "thread"

    def __init__(self, handlers: registry_module.Registry, *, max_workers: int = 16) -> None:
        self._handlers = handlers
        self._size = max_workers
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="sundial-job"
        )
        self._lock = threading.Lock()
        self._busy = 0
        self._leaked = 0

    @property
    def size(self) -> int:
        return self._size

    @property
    def busy(self) -> int:
        """Threads running a handler, leaked ones included (queued jobs are not)."""
        with self._lock:
            return self._busy

    @property
    def leaked(self) -> int:
        """Slots held by threads whose attempt already timed out or was cancelled."""
        with self._lock:
            return self._leaked

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        handler = prepared.handler
        stop_event = threading.Event()
        ctx = context.make(
            handler=handler.name,
            run_id=job.run_id,
            attempt=job.attempt,
            fencing_token=job.fencing_token,
            idempotency_key=job.idempotency_key,
            fire_time=job.fire_time,
            cancel_event=stop_event,
            namespace=job.namespace,
            run_at=job.run_at,
            started_at=job.started_at,
        )
        future = self._pool.submit(self._call, handler.function, prepared.args, ctx)
        try:
            stop = await base.wait_for(
                base.bridge(future), seconds=prepared.timeout_seconds, cancel=job.cancel
            )
        except asyncio.CancelledError:
            stop_event.set()
            self._leak(future)
            raise
        if stop is base.Stop.DONE:
            error_text = future.result()
            if error_text is None:
                return outcomes.Succeeded()
            return outcomes.Failed(error_text)
        stop_event.set()
        leaked = self._leak(future)
        if stop is base.Stop.CANCELLED:
            return outcomes.Cancelled()
        if not leaked:
            why = f"it never started: all {self._size} threads were busy"
        else:
            why = "threads cannot be killed, so its slot stays leaked until it returns"
        return outcomes.TimedOut(
            f"handler {handler.name!r} did not finish within {prepared.timeout_seconds:g}s; " + why,
            prepared.timeout_seconds,
        )

    def _leak(self, future: concurrent.futures.Future[str | None]) -> bool:
        """Count the slot as leaked unless the job was still queued (then drop it)."""
        if future.cancel():
            return False
        with self._lock:
            self._leaked += 1
        future.add_done_callback(self._unleak)
        return True

    def _call(self, function: Callable[..., Any], args: Any, ctx: context.JobContext) -> str | None:
        """Runs in the pool thread, so ``busy`` counts running handlers, not queued ones."""
        with self._lock:
            self._busy += 1
        try:
            return base.call_sync(function, args, ctx)
        finally:
            with self._lock:
                self._busy -= 1

    def _unleak(self, future: concurrent.futures.Future[str | None]) -> None:
        with self._lock:
            self._leaked -= 1

    async def close(self) -> None:
        """Stop taking work; does not wait for leaked threads (they cannot be stopped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
