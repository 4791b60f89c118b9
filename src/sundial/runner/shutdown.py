"""SIGTERM and SIGINT start a drain instead of killing the runner.

The signal only sets an event. The claim loop sees it and stops claiming; running attempts get
``--grace-seconds`` to finish and have their results written; whatever is still running then is
released back to ``pending`` with a fenced ``releases.release`` (no retry spent), its local
attempt cancelled and its result discarded; then the process exits 0. A second signal during
the drain cuts the grace period short (the release still happens).
"""

from __future__ import annotations

import asyncio
import logging
import signal

log = logging.getLogger("sundial.runner.shutdown")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Shutdown:
    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.hurry = asyncio.Event()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)

    def uninstall(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)

    def request(self, reason: str = "requested") -> None:
        if self.requested.is_set():
            self.hurry.set()
            return
        log.info("draining", extra={"reason": reason})
        self.requested.set()

    def _on_signal(self, signum: int) -> None:
        self.request(signal.Signals(signum).name)
