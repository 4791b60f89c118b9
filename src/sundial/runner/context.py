"""The ``JobContext`` a handler receives next to its arguments.

It is the handler's only view of the run: identity (``run_id``), the attempt, the fencing
token (``fencing_token``) and the per-run ``idempotency_key`` to fence its own side effects
with, the
logical ``fire_time``, when the run became due (``run_at``) and when this attempt started
(``started_at``; the difference is the pickup lag), a logger that stamps every record with
the run, and a cancellation
signal. Async handlers get an ``asyncio.Event`` (``await ctx.cancel_event.wait()``); thread,
process and subprocess handlers get a ``threading.Event`` and poll ``ctx.cancelled()``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import MutableMapping
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


class JobContext:
    """Read-only: assigning to an attribute raises ``AttributeError``.

    A slotted class rather than a frozen dataclass, and ``logger`` is built on first use:
    the runner builds one context per attempt, and the dataclass plus an eager logger
    adapter were about 3 µs of a no-op job's ~60 µs (ADR 0012).
    """

    __slots__ = (
        "_logger",
        "attempt",
        "cancel_event",
        "fencing_token",
        "fire_time",
        "handler",
        "idempotency_key",
        "namespace",
        "run_at",
        "run_id",
        "started_at",
    )

    run_id: str
    #: Which claim of the run this is: 1, 2, ... (what ``kubectl get jobruns`` shows).
    attempt: int
    #: Grows with every claim of the run and never repeats, whatever the store: guard a side
    #: effect with it (write only if it is greater than the one stored beside the effect). It
    #: equals ``attempt`` unless the deployment runs the hot queue on Redis, where it is
    #: ``(epoch << 32) | attempt``: a Redis that lost its data and starts a new epoch may
    #: hand an attempt number out again, never a token.
    fencing_token: int
    idempotency_key: str
    fire_time: datetime | None
    handler: str
    cancel_event: asyncio.Event | threading.Event
    #: The namespace of the run's job: the tenant the run belongs to (None when run by hand).
    namespace: str | None
    #: When the run became due: its fire time plus spread, its delay, or its retry time (None
    #: when run by hand with ``sundial exec``).
    run_at: datetime | None
    #: When this attempt was claimed, by PostgreSQL's clock (None when run by hand).
    started_at: datetime | None
    _logger: logging.LoggerAdapter[logging.Logger] | None

    def __init__(
        self,
        *,
        run_id: str,
        attempt: int,
        idempotency_key: str,
        fire_time: datetime | None,
        handler: str,
        cancel_event: asyncio.Event | threading.Event,
        logger: logging.LoggerAdapter[logging.Logger] | None = None,
        namespace: str | None = None,
        run_at: datetime | None = None,
        started_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "run_id", run_id)
        setter(self, "attempt", attempt)
        setter(self, "fencing_token", attempt if fencing_token is None else fencing_token)
        setter(self, "idempotency_key", idempotency_key)
        setter(self, "fire_time", fire_time)
        setter(self, "handler", handler)
        setter(self, "cancel_event", cancel_event)
        setter(self, "_logger", logger)
        setter(self, "namespace", namespace)
        setter(self, "run_at", run_at)
        setter(self, "started_at", started_at)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"JobContext is read-only; cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"JobContext is read-only; cannot delete {name!r}")

    def __repr__(self) -> str:
        return (
            f"JobContext(run_id={self.run_id!r}, attempt={self.attempt!r}, "
            f"handler={self.handler!r}, idempotency_key={self.idempotency_key!r})"
        )

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        """A logger that stamps every record with ``run_id``, ``attempt`` and ``handler``."""
        logger = self._logger
        if logger is None:
            logger = RunLogger(
                _handler_logger(self.handler),
                {"run_id": self.run_id, "attempt": self.attempt, "handler": self.handler},
            )
            object.__setattr__(self, "_logger", logger)
        return logger

    def cancelled(self) -> bool:
        """True once the run was cancelled or timed out; long handlers should check it."""
        return self.cancel_event.is_set()


@functools.lru_cache(maxsize=1024)
def _handler_logger(handler: str) -> logging.Logger:
    return logging.getLogger(f"{JOB_LOGGER_NAME}.{handler}")


def make(
    *,
    handler: str,
    run_id: str,
    attempt: int,
    idempotency_key: str,
    fire_time: datetime | None,
    cancel_event: asyncio.Event | threading.Event,
    namespace: str | None = None,
    run_at: datetime | None = None,
    started_at: datetime | None = None,
    fencing_token: int | None = None,
) -> JobContext:
    return JobContext(
        fencing_token=fencing_token,
        namespace=namespace,
        run_at=run_at,
        started_at=started_at,
        run_id=run_id,
        attempt=attempt,
        idempotency_key=idempotency_key,
        fire_time=fire_time,
        handler=handler,
        cancel_event=cancel_event,
    )
