"""The ``JobContext`` a handler receives next to its arguments.

It is the handler's only view of the run: identity (``run_id``), the fencing token
(``attempt``) and the per-run ``idempotency_key`` to fence its own side effects with, the
logical ``fire_time``, a logger that stamps every record with the run, and a cancellation
signal. Async handlers get an ``asyncio.Event`` (``await ctx.cancel_event.wait()``); thread,
process and subprocess handlers get a ``threading.Event`` and poll ``ctx.cancelled()``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

JOB_LOGGER_NAME = "sundial.job"


class RunLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds ``run_id``, ``attempt`` and ``handler`` to every record (as ``extra`` keys)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        extra = dict(self.extra or {})
        extra.update(kwargs.get("extra") or {})
        kwargs["extra"] = extra
        return msg, kwargs


@dataclass(frozen=True)
class JobContext:
    run_id: str
    attempt: int
    idempotency_key: str
    fire_time: datetime | None
    handler: str
    cancel_event: asyncio.Event | threading.Event
    logger: logging.LoggerAdapter[logging.Logger]

    def cancelled(self) -> bool:
        """True once the run was cancelled or timed out; long handlers should check it."""
        return self.cancel_event.is_set()


def make(
    *,
    handler: str,
    run_id: str,
    attempt: int,
    idempotency_key: str,
    fire_time: datetime | None,
    cancel_event: asyncio.Event | threading.Event,
) -> JobContext:
    logger = RunLogger(
        logging.getLogger(f"{JOB_LOGGER_NAME}.{handler}"),
        {"run_id": run_id, "attempt": attempt, "handler": handler},
    )
    return JobContext(
        run_id=run_id,
        attempt=attempt,
        idempotency_key=idempotency_key,
        fire_time=fire_time,
        handler=handler,
        cancel_event=cancel_event,
        logger=logger,
    )
