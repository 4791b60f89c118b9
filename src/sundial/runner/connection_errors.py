"""What counts as "the database is unreachable", and how long to wait before trying again.

PostgreSQL restarting, failing over or dropping a connection shows up as
``psycopg.OperationalError`` (``AdminShutdown``, a refused connection, the pool's
``PoolTimeout``) or ``psycopg.InterfaceError`` (a connection closed under us). Every loop of
the runner catches exactly these, marks the runner not ready, waits with capped full-jitter
backoff and tries again; anything else is a bug and is allowed to surface. Leases are
time-based, so a runner that reconnects within its lease loses nothing, and one that does not
finds its late writes fenced out.
"""

from __future__ import annotations

import psycopg

from sundial.scheduling import backoff

ERRORS: tuple[type[Exception], ...] = (psycopg.OperationalError, psycopg.InterfaceError)

FLOOR_SECONDS = 0.05
CAP_SECONDS = 2.0


def retry_delay(failures: int) -> float:
    """Seconds to wait after ``failures`` consecutive failures (1 for the first)."""
    jittered = backoff.delay_seconds(max(failures, 1), base_seconds=0.1, cap_seconds=CAP_SECONDS)
    return FLOOR_SECONDS + jittered


def describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
