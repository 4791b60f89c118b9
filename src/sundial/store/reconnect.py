"""Waiting for the database to come back: the one backoff of every loop that talks to it.

PostgreSQL restarting, failing over or dropping a connection reaches a caller as
``errors.StoreUnavailableError`` (the pool's edge translates psycopg's errors), or, on the one
connection that lives outside the pool (the runner's LISTEN), as psycopg's
``OperationalError`` / ``InterfaceError``: ``ERRORS`` is both. A loop catches exactly these,
calls ``Backoff.failed`` (which counts, logs and says how long to wait: capped full-jitter
backoff), waits, and tries again; on its next success ``Backoff.succeeded`` resets the count.
Anything else is a bug and is allowed to surface. Leases are time-based, so a worker that
reconnects within its lease loses nothing, and one that does not finds its late writes
fenced out.
"""

from __future__ import annotations

import logging
from typing import Any

from sundial.scheduling import backoff
from sundial.store import errors, pool

__all__ = ["CAP_SECONDS", "ERRORS", "FLOOR_SECONDS", "Backoff", "describe", "retry_delay"]

ERRORS: tuple[type[Exception], ...] = (errors.StoreUnavailableError, *pool.UNAVAILABLE)

FLOOR_SECONDS = 0.05
CAP_SECONDS = 2.0


def retry_delay(failures: int, *, cap_seconds: float = CAP_SECONDS) -> float:
    """Seconds to wait after ``failures`` consecutive failures (1 for the first)."""
    jittered = backoff.delay_seconds(max(failures, 1), base_seconds=0.1, cap_seconds=cap_seconds)
    return min(FLOOR_SECONDS + jittered, cap_seconds)


def describe(error: BaseException) -> str:
    """One line for a log: the error's type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


class Backoff:
    """The failures in a row of one loop, and what to do about the next one.

    ``failed`` logs ``message`` at WARNING with the error, ``retry_in_seconds`` and
    ``failures_in_a_row`` (plus ``fields``) — for the first failure and then every
    ``log_every``-th, so a loop retried every tick does not flood its log — and returns the
    delay to wait before the next try, at most ``cap_seconds``.
    """

    def __init__(
        self,
        message: str,
        *,
        logger: logging.Logger,
        cap_seconds: float = CAP_SECONDS,
        log_every: int = 1,
    ) -> None:
        self.message = message
        self.failures = 0
        self._log = logger
        self._cap_seconds = cap_seconds
        self._log_every = max(1, log_every)

    def failed(self, error: BaseException, **fields: Any) -> float:
        """Count a failure; log it (see the class); return seconds to wait."""
        self.failures += 1
        delay = retry_delay(self.failures, cap_seconds=self._cap_seconds)
        if self.failures == 1 or self.failures % self._log_every == 0:
            self._log.warning(
                self.message,
                extra={
                    "error": describe(error),
                    "retry_in_seconds": round(delay, 3),
                    "failures_in_a_row": self.failures,
                    **fields,
                },
            )
        return delay

    def succeeded(self) -> bool:
        """Reset the count; True if this success ends a run of failures (a reconnect)."""
        recovered = self.failures > 0
        self.failures = 0
        return recovered
