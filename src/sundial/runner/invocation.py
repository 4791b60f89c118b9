"""One attempt of one run, as the claim loop hands it to an executor.

The invocation carries everything the handler may see (through its ``JobContext``) plus the
two ways an attempt is stopped early: its timeout and its cancellation event. Setting
``cancel`` (for example when a heartbeat sees ``cancel_requested``) stops the attempt with a
``Cancelled`` outcome.

``cancel`` is a ``CancelEvent``: an ``asyncio.Event`` that also runs callbacks when set, so an
executor can watch it without a task of its own per attempt (a task per job was a measurable
share of a no-op job's cost in bench/runner_throughput.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any


class CancelEvent(asyncio.Event):
    """An ``asyncio.Event`` that also calls back, once, when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the event is set (now, if it is); returns a remover."""
        if self.is_set():
            callback()
            return _nothing
        self._callbacks.append(callback)

        def remove() -> None:
            self.discard(callback)

        return remove

    def add(self, callback: Callable[[], None]) -> None:
        """``on_set`` without building a remover: undo it with ``discard(callback)``. For the
        per-job path, where the remover closure was measurable."""
        if self.is_set():
            callback()
        else:
            self._callbacks.append(callback)

    def discard(self, callback: Callable[[], None]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)


def _nothing() -> None:
    return None


class Invocation:
    """One attempt as an executor sees it. Read-only by contract (nothing assigns to it after
    the claim loop built it); a plain slotted class rather than a frozen dataclass because
    the claim loop builds one per job, and a frozen dataclass's ``__init__`` cost about 3 µs
    of a no-op job's ~60 µs (bench/runner_throughput.py, ADR 0012)."""

    __slots__ = (
        "args",
        "attempt",
        "cancel",
        "fencing_token",
        "fire_time",
        "handler",
        "idempotency_key",
        "namespace",
        "run_at",
        "run_id",
        "started_at",
        "timeout_seconds",
    )

    def __init__(
        self,
        handler: str,
        run_id: str,
        attempt: int,
        idempotency_key: str,
        args: Mapping[str, Any] | None = None,
        fire_time: datetime | None = None,
        timeout_seconds: float | None = None,
        cancel: asyncio.Event | None = None,
        namespace: str | None = None,
        run_at: datetime | None = None,
        started_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> None:
        self.handler = handler
        """A registered handler name; never an import path."""
        self.run_id = run_id
        self.attempt = attempt
        """Which claim of the run this is (1, 2, ...)."""
        self.fencing_token = attempt if fencing_token is None else fencing_token
        """Grows with every claim of the run and never repeats: ``attempt`` on PostgreSQL
        alone, ``(epoch << 32) | attempt`` on the hot queue (``ClaimedRun.fencing_token``)."""
        self.idempotency_key = idempotency_key
        """Per run, not per attempt: the same on every retry."""
        self.args: Mapping[str, Any] = {} if args is None else args
        self.fire_time = fire_time
        self.timeout_seconds = timeout_seconds
        """Overrides the handler's registered timeout when set."""
        self.cancel: asyncio.Event = CancelEvent() if cancel is None else cancel
        self.namespace = namespace
        """The namespace of the run's job, handed to the handler (``JobContext.namespace``)."""
        self.run_at = run_at
        """When the run became due (its fire time plus spread, its delay, its retry time)."""
        self.started_at = started_at
        """When this attempt was claimed (PostgreSQL's clock): ``started_at - run_at`` is the
        run's pickup lag."""

    def __repr__(self) -> str:
        return (
            f"Invocation(handler={self.handler!r}, run_id={self.run_id!r}, "
            f"attempt={self.attempt!r})"
        )
