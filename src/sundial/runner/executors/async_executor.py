"""Runs ``async def`` handlers as tasks on the runner's own event loop.

Cheapest model, and the most fragile: a handler that blocks (``time.sleep``, CPU work) stalls
every other job on the loop, which ``loop_lag`` makes visible. Timeout and cancellation
cancel the task; the handler sees ``CancelledError`` at its next ``await``.
"""

from __future__ import annotations

import asyncio
import contextlib

from sundial.runner import context, invocation, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base


class AsyncExecutor:
    name = "async"

    def __init__(self, handlers: registry_module.Registry, *, max_concurrency: int = 1000) -> None:
        self._handlers = handlers
        self._size = max_concurrency
        self._tasks: set[asyncio.Task[object]] = set()

    @property
    def size(self) -> int:
        return self._size

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        handler = prepared.handler
        ctx = context.make(
            handler=handler.name,
            run_id=job.run_id,
            attempt=job.attempt,
            idempotency_key=job.idempotency_key,
            fire_time=job.fire_time,
            cancel_event=job.cancel,
        )
        task: asyncio.Task[object] = asyncio.ensure_future(handler.function(prepared.args, ctx))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            stop = await base.wait_for(task, seconds=prepared.timeout_seconds, cancel=job.cancel)
        except asyncio.CancelledError:
            # Our caller is going away (runner shutdown): take the handler with us.
            task.cancel()
            raise
        if stop is base.Stop.DONE:
            error = task.exception() if not task.cancelled() else None
            if task.cancelled():
                return outcomes.Cancelled("the handler's task was cancelled")
            if error is not None:
                return outcomes.Failed(base.format_exception(error))
            return outcomes.Succeeded()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if stop is base.Stop.CANCELLED:
            return outcomes.Cancelled()
        return outcomes.TimedOut(
            f"handler {handler.name!r} did not finish within {prepared.timeout_seconds:g}s; "
            "its task was cancelled",
            prepared.timeout_seconds,
        )

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
