"""Wake an idle claim loop when runs become claimable: LISTEN/NOTIFY, with polling behind it.

Migration 0020 notifies channel ``sundial_runs`` (payload: the queue) once per inserting
statement; the store's reaper notifies with an empty payload (every queue) when it promotes or
requeues runs. A notification only sets an ``asyncio.Event``: any number of them
between two claims cost one claim, so a burst of inserts cannot turn into a burst of claims.

The listener holds its own connection (LISTEN does not survive going back to a pool). When
that connection breaks it reconnects with capped, jittered backoff and wakes the loop once on
reconnect, since notifications sent while it was away are gone. Missing a notification is
never a correctness problem: the claim loop also polls (``--poll-seconds``, 1 s by default).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

import psycopg

from sundial.store import reaper, reconnect

CHANNEL = reaper.WAKEUP_CHANNEL

log = logging.getLogger("sundial.runner.wakeup")


class Listener:
    def __init__(
        self,
        dsn: str,
        queues: Collection[str],
        wake: asyncio.Event,
        *,
        announced: asyncio.Event | None = None,
    ) -> None:
        """``wake`` is set by notifications for ``queues`` (or every queue); ``announced``, if
        given, by every notification, whatever its queue (the hot queue's relay moves them
        all)."""
        self._dsn = dsn
        self._queues = frozenset(queues)
        self._wake = wake
        self._announced = announced
        self.connected = False

    async def run(self) -> None:
        """Listen until cancelled, reconnecting as often as it takes."""
        retry = reconnect.Backoff("listen connection lost; reconnecting", logger=log)
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
            except reconnect.ERRORS as error:
                await asyncio.sleep(retry.failed(error))
                continue
            try:
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.connected = True
                    retry.succeeded()
                    self._wake.set()  # whatever was announced while we were away
                    if self._announced is not None:
                        self._announced.set()
                    async for notify in conn.notifies():
                        if not notify.payload or notify.payload in self._queues:
                            self._wake.set()
                        if self._announced is not None:
                            self._announced.set()
            except reconnect.ERRORS as error:
                await asyncio.sleep(retry.failed(error))
            finally:
                self.connected = False
