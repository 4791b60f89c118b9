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
from dataclasses import dataclass, field
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
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Invocation:
    handler: str
    """A registered handler name; never an import path."""
    run_id: str
    attempt: int
    """The fencing token: grows with every claim of the run."""
    idempotency_key: str
    """Per run, not per attempt: the same on every retry."""
    args: Mapping[str, Any] = field(default_factory=dict)
    fire_time: datetime | None = None
    timeout_seconds: float | None = None
    """Overrides the handler's registered timeout when set."""
    cancel: asyncio.Event = field(default_factory=CancelEvent)
