"""Runs ``async def`` handlers on the runner's own event loop, inside the caller's task.

Cheapest model, and the most fragile: a handler that blocks (``time.sleep``, CPU work) stalls
every other job on the loop, which ``loop_lag`` makes visible. Timeout and cancellation
cancel the task; the handler sees ``CancelledError`` at its next ``await``. The executor
catches that cancellation (and ``uncancel()``s it) so it never reaches the caller; a handler
that swallows it and returns still ends ``TimedOut``/``Cancelled``. Running in the caller's
task rather than a task of its own took a no-op job from about 12K to 16K jobs/s
(bench/runner_throughput.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sundial.runner import context, invocation, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base


class AsyncExecutor:
    name = "async"

    def __init__(self, handlers: registry_module.Registry, *, max_concurrency: int = 1000) -> None:
        self._handlers = handlers
        self._size = max_concurrency
        # The task running each attempt -> how to interrupt it (close() uses it).
        self._running: dict[asyncio.Task[Any], Callable[[base.Stop], None]] = {}

    @property
    def size(self) -> int:
        return self._size

    @property
    def busy(self) -> int:
        return len(self._running)

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        """Runs the handler inside the caller's task: no task of its own per attempt.

        A timeout, the cancel event or ``close()`` cancel the caller's task, and the
        ``CancelledError`` that brings is caught here and turned into the outcome, so it never
        reaches the caller. A cancellation of the caller itself is re-raised as usual.
        """
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        if job.cancel.is_set():
            return outcomes.Cancelled()
        handler = prepared.handler
        ctx = context.make(
            handler=handler.name,
            run_id=job.run_id,
            attempt=job.attempt,
            idempotency_key=job.idempotency_key,
            fire_time=job.fire_time,
            cancel_event=job.cancel,
        )
        current = asyncio.current_task()
        if current is None:  # pragma: no cover - run() is always awaited inside a task
            raise RuntimeError("AsyncExecutor.run must be awaited inside a task")
        stopped: list[base.Stop] = []

        def interrupt(reason: base.Stop) -> None:
            if not stopped:
                stopped.append(reason)
                current.cancel()

        loop = asyncio.get_running_loop()
        timer = loop.call_later(prepared.timeout_seconds, interrupt, base.Stop.TIMED_OUT)
        remove = _watch(job.cancel, lambda: interrupt(base.Stop.CANCELLED))
        self._running[current] = interrupt
        try:
            await handler.function(prepared.args, ctx)
        except asyncio.CancelledError:
            if not stopped:
                if current.cancelling():
                    raise  # our caller is being cancelled (runner shutdown): let it be
                return outcomes.Cancelled("the handler's task was cancelled")
            current.uncancel()
        except Exception as error:
            if stopped:
                current.uncancel()
            return outcomes.Failed(base.format_exception(error))
        else:
            if not stopped:
                return outcomes.Succeeded()
            # It swallowed its interruption and returned anyway: still a timeout or cancel.
            current.uncancel()
        finally:
            timer.cancel()
            remove()
            del self._running[current]
        if stopped[0] is base.Stop.CANCELLED:
            return outcomes.Cancelled()
        return outcomes.TimedOut(
            f"handler {handler.name!r} did not finish within {prepared.timeout_seconds:g}s; "
            "its task was cancelled",
            prepared.timeout_seconds,
        )

    async def close(self) -> None:
        for interrupt in list(self._running.values()):
            interrupt(base.Stop.CANCELLED)


def _watch(event: asyncio.Event, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` when ``event`` is set; returns a function that stops watching."""
    if isinstance(event, invocation.CancelEvent):
        return event.on_set(callback)
    waiter = asyncio.ensure_future(event.wait())
    waiter.add_done_callback(lambda w: None if w.cancelled() else callback())

    def stop_watching() -> None:
        waiter.cancel()

    return stop_watching
