"""Event-loop lag: how long a callback that is due waits before the loop runs it.

On a healthy loop that is well under a millisecond. A handler that blocks the loop
(``time.sleep`` in an ``async def``, CPU work) delays every callback by as long as it blocks,
so the lag shows it, while work in threads or processes does not. The monitor schedules one
callback every ``interval_seconds`` (``call_later``, so a block anywhere in between is caught,
not only one that happens to start right after a ``call_soon``) and records how late it ran.
It keeps the latest and the largest sample; ``observe`` (the Prometheus histogram) sees each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class LoopLagMonitor:
    def __init__(
        self,
        *,
        interval_seconds: float = 0.25,
        observe: Callable[[float], None] | None = None,
    ) -> None:
        self.interval_seconds = interval_seconds
        self._observe = observe
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.latest_seconds = 0.0
        self.max_seconds = 0.0
        self.samples = 0

    @property
    def running(self) -> bool:
        return self._handle is not None

    def start(self) -> None:
        if self._handle is None:
            self._loop = asyncio.get_running_loop()
            self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def reset_max(self) -> float:
        """Return the largest lag since the last reset and start a new period."""
        largest, self.max_seconds = self.max_seconds, 0.0
        return largest

    def _schedule(self) -> None:
        assert self._loop is not None
        due = self._loop.time() + self.interval_seconds
        self._handle = self._loop.call_at(due, self._tick, due)

    def _tick(self, due: float) -> None:
        assert self._loop is not None
        lag = max(self._loop.time() - due, 0.0)
        self.latest_seconds = lag
        self.max_seconds = max(self.max_seconds, lag)
        self.samples += 1
        if self._observe is not None:
            self._observe(lag)
        self._schedule()
