"""A trigger loop in its own OS process, driven in lock step over stdin.

``python -m support.trigger_process DSN HOLDER`` (with ``tests/`` on ``PYTHONPATH``) prints
``ready``; then each line ``tick <iso instant>`` sets its ManualClock to that instant, runs one
tick and prints ``done <runs created>``; ``quit`` (or end of input) stops it. The two-loop test
drives two of these with the same instants.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime

from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from support.trigger import START


async def main(dsn: str, holder: str) -> None:
    opened = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    simulated = clock.ManualClock(START)
    settings = trigger.TriggerSettings(batch_size=100, fires_per_second=None)
    loop = trigger.TriggerLoop(opened, clock=simulated, holder=holder, settings=settings)
    print("ready", flush=True)
    try:
        while True:
            line = (await asyncio.to_thread(sys.stdin.readline)).strip()
            if not line or line == "quit":
                break
            command, _, instant = line.partition(" ")
            assert command == "tick", line
            simulated.set(datetime.fromisoformat(instant))
            report = await loop.tick()
            print(f"done {report.created}", flush=True)
    finally:
        await opened.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
