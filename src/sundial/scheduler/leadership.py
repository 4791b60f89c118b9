"""One active operator at a time, by a lease row in PostgreSQL.

kopf's own peering needs its own cluster-wide CRDs and only pauses handlers; Sundial already
has leases in its system of record (``store.leases``), so the operator takes the ``operator``
lease before it starts kopf, the trigger and the mirror, and renews it every third of its TTL.
A standby process waits (alive, not ready to act). A leader that cannot renew in time stops
acting - it exits, and its supervisor restarts it as a standby - so at most one operator
writes at a time, except across a lost renewal, which everything tolerates: fires are
deduplicated by their unique key and the mirror is level-triggered (docs/adr/0008-operator.md).
A restart with the same holder name (a StatefulSet pod, or ``--holder``) takes its lease back
at once.

The renewals run on a thread of their own (``keep_apart``), on a blocking connection of their
own: the operator's event loop is busy for seconds at a time while it
starts beside thousands of objects (kopf's initial listing, the mirror's first pass), and a
renewal that waited for it came after a 3 s lease had expired, so the operator exited, came
back, and did it again (docs/adr/0040-prompt-job-run-submission.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable

from sundial.store import leases
from sundial.store.pool import Pool

__all__ = ["LEASE_NAME", "Leadership"]

LEASE_NAME = "operator"

log = logging.getLogger("sundial.scheduler.leadership")


class Leadership:
    def __init__(self, pool: Pool, holder: str, *, ttl_seconds: float = 15.0) -> None:
        self.pool = pool
        self.holder = holder
        self.ttl_seconds = ttl_seconds
        self.lease: leases.LeaderLease | None = None
        self.lost = asyncio.Event()
        #: The holder this process took the lease over from (``None``: itself, or nobody):
        #: whatever that one left running is this one's to adopt.
        self.previous: str | None = None

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until this process holds the lease (True) or ``stop`` is set (False)."""
        announced = False
        while not stop.is_set():
            try:
                before = await leases.last_holder(self.pool, LEASE_NAME)
                self.lease = await leases.acquire(
                    self.pool, LEASE_NAME, self.holder, ttl_seconds=self.ttl_seconds
                )
            except Exception:
                log.exception("could not ask for the operator lease; retrying")
                self.lease = None
            if self.lease is not None:
                self.previous = before if before != self.holder else None
                log.info(
                    "leading",
                    extra={
                        "holder": self.holder,
                        "epoch": self.lease.epoch,
                        "previous": self.previous,
                    },
                )
                return True
            if not announced:
                log.info("standing by: another operator holds the lease")
                announced = True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.ttl_seconds / 3):  # wait_for can lose a cancel
                    await stop.wait()
        return False

    async def keep_apart(self, dsn: str, stop: asyncio.Event) -> None:
        """Renew every third of the TTL until ``stop``; set ``lost`` if a renewal fails or comes
        too late. On a thread of its own with a blocking connection to ``dsn``, so a busy event
        loop here cannot delay a renewal. Returns when ``stop`` is set (the thread has ended
        then) or the lease is lost."""
        home = asyncio.get_running_loop()
        ended = home.create_future()
        stopping = threading.Event()

        def lose() -> None:
            home.call_soon_threadsafe(self.lost.set)

        def end() -> None:
            if not ended.done():
                ended.set_result(None)

        def main() -> None:
            renewals = leases.BlockingLeases(dsn)
            try:
                self._renew_blocking(renewals, stopping, lose)
            except Exception:
                log.exception("the operator lease's thread failed; stopping")
                lose()
            finally:
                renewals.close()
                home.call_soon_threadsafe(end)

        threading.Thread(target=main, name="operator-lease", daemon=True).start()
        stopper = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({stopper, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            stopping.set()
            await ended

    def _renew_blocking(
        self,
        renewals: leases.BlockingLeases,
        stopping: threading.Event,
        lose: Callable[[], object],
    ) -> None:
        renewed_at = time.monotonic()
        while not stopping.wait(self.ttl_seconds / 3):
            try:
                lease = renewals.acquire(LEASE_NAME, self.holder, ttl_seconds=self.ttl_seconds)
            except Exception:
                log.exception("could not renew the operator lease")
                lease = None
            if lease is not None and (self.lease is None or lease.epoch == self.lease.epoch):
                self.lease = lease
                renewed_at = time.monotonic()
                continue
            since = time.monotonic() - renewed_at
            if lease is not None or since >= self.ttl_seconds:
                log.error(
                    "lost the operator lease; stopping",
                    extra={"holder": self.holder, "seconds_since_renewal": round(since, 3)},
                )
                lose()
                return

    async def resign(self) -> None:
        if self.lease is not None:
            with contextlib.suppress(Exception):
                await leases.resign(self.pool, self.lease)
