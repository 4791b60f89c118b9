"""Shared by the runner tests; copied, not imported, so each tier stays self-contained."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from sundial.runner import invocation


def invoke(
    handler: str, args: dict[str, Any] | None = None, **fields: Any
) -> invocation.Invocation:
    fields.setdefault("run_id", "run-1")
    fields.setdefault("attempt", 1)
    fields.setdefault("idempotency_key", "key-1")
    return invocation.Invocation(handler=handler, args=args or {}, **fields)


async def eventually(predicate: Callable[[], bool], *, within: float = 20.0) -> None:
    """Wait for a condition another thread or process brings about (generous bound)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)
