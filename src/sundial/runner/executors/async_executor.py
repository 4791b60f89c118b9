"""Runs ``async def`` handlers on the runner's own event loop, inside the caller's task.

Cheapest model, and the most fragile: a handler that blocks (``time.sleep``, CPU work) stalls
every other job on the loop, which ``loop_lag`` makes visible. Timeout and cancellation
cancel the task; the handler sees ``CancelledError`` at its next ``await``. The executor
catches that cancellation (and ``uncancel()``s it) so it never reaches the caller; a handler
that swallows it and returns still ends ``TimedOut``/``Cancelled``. Running in the caller's
task rather than a task of its own took a no-op job from about 12K to 16K jobs/s
(bench/runner_throughput.py).

Timeouts are bucketed: attempts whose deadlines fall in the same ``deadline_tick_seconds``
(10 ms) share one loop timer, and a finished attempt just leaves its bucket. A timer per
attempt (``call_later`` + ``cancel``) was a measurable share of a no-op job, and a claimed
batch starts in one loop iteration, so its attempts land in one or two buckets. A timeout
fires at most one tick late, never early (ADR 0012).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from sundial.runner import context, invocation, outcomes
from sundial.runner import registry as registry_module
from sundial.runner.executors import base

DEADLINE_TICK_SECONDS = 0.01


class AsyncExecutor:
    name = "async"

    def __init__(
        self,
        handlers: registry_module.Registry,
        *,
        max_concurrency: int = 1000,
        deadline_tick_seconds: float = DEADLINE_TICK_SECONDS,
    ) -> None:
        self._handlers = handlers
        self._size = max_concurrency
        self._tick = deadline_tick_seconds
        # Every attempt running now (close() interrupts them all).
        self._running: set[_Attempt] = set()
        # Timeouts, bucketed: tick number -> the attempts whose deadline falls in it. One
        # timer per bucket instead of one per attempt (see the module docstring).
        self._deadlines: dict[int, set[_Attempt]] = {}

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
        cancel = job.cancel
        if cancel.is_set():
            return outcomes.Cancelled()
        handler = prepared.handler
        ctx = context.JobContext(
            run_id=job.run_id,
            attempt=job.attempt,
            fencing_token=job.fencing_token,
            idempotency_key=job.idempotency_key,
            fire_time=job.fire_time,
            handler=handler.name,
            cancel_event=cancel,
            namespace=job.namespace,
            run_at=job.run_at,
            started_at=job.started_at,
        )
        current = asyncio.current_task()
        if current is None:  # pragma: no cover - run() is always awaited inside a task
            raise RuntimeError("AsyncExecutor.run must be awaited inside a task")
        attempt = _Attempt(current)
        self._running.add(attempt)
        bucket = self._deadline_bucket(prepared.timeout_seconds)
        bucket.add(attempt)
        watched = cancel if isinstance(cancel, invocation.CancelEvent) else None
        remove: Callable[[], None] | None = None
        if watched is not None:
            watched.add(attempt)  # the attempt is its own callback: no closure per job
        else:
            remove = _watch(cancel, attempt)
        try:
            await handler.function(prepared.args, ctx)
        except asyncio.CancelledError:
            if attempt.stopped is None:
                if current.cancelling():
                    raise  # our caller is being cancelled (runner shutdown): let it be
                return outcomes.Cancelled("the handler's task was cancelled")
            current.uncancel()
        except Exception as error:
            if attempt.stopped is not None:
                current.uncancel()
            return outcomes.Failed(base.format_exception(error))
        else:
            if attempt.stopped is None:
                return outcomes.Succeeded()
            # It swallowed its interruption and returned anyway: still a timeout or cancel.
            current.uncancel()
        finally:
            bucket.discard(attempt)
            if watched is not None:
                watched.discard(attempt)
            elif remove is not None:
                remove()
            self._running.discard(attempt)
        if attempt.stopped is base.Stop.CANCELLED:
            return outcomes.Cancelled()
        return outcomes.TimedOut(
            f"handler {handler.name!r} did not finish within {prepared.timeout_seconds:g}s; "
            "its task was cancelled",
            prepared.timeout_seconds,
        )

    def _deadline_bucket(self, seconds: float) -> set[_Attempt]:
        """The set of attempts timing out at the first tick at or after ``seconds`` from now.

        A deadline is rounded up to a tick, so a timeout fires at most one tick late, never
        early."""
        loop = asyncio.get_running_loop()
        tick = math.ceil((loop.time() + seconds) / self._tick)
        bucket = self._deadlines.get(tick)
        if bucket is None:
            bucket = self._deadlines[tick] = set()
            loop.call_at(tick * self._tick, self._expire, tick)
        return bucket

    def _expire(self, tick: int) -> None:
        for attempt in self._deadlines.pop(tick, ()):
            attempt.interrupt(base.Stop.TIMED_OUT)

    async def close(self) -> None:
        for attempt in list(self._running):
            attempt.interrupt(base.Stop.CANCELLED)


class _Attempt:
    """One running handler: its task and, once interrupted, why."""

    __slots__ = ("stopped", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.stopped: base.Stop | None = None

    def interrupt(self, reason: base.Stop) -> None:
        if self.stopped is None:
            self.stopped = reason
            self.task.cancel()

    def __call__(self) -> None:
        """The attempt's cancel event was set."""
        self.interrupt(base.Stop.CANCELLED)


def _watch(event: asyncio.Event, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` when ``event`` is set; returns a function that stops watching."""
    if isinstance(event, invocation.CancelEvent):
        return event.on_set(callback)
    waiter = asyncio.ensure_future(event.wait())
    waiter.add_done_callback(lambda w: None if w.cancelled() else callback())

    def stop_watching() -> None:
        waiter.cancel()

    return stop_watching
