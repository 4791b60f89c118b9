"""Call your handlers in a unit test, without a cluster, a database or a runner.

    from sundial import testing
    import mypkg.jobs  # registers the handlers

    def test_report_is_built():
        testing.call("reports.build", {"day": "2026-01-31"})

    async def test_async_handler():
        await testing.acall("emails.send", {"to": "a@example.com"}, attempt=2)

Args are validated against the handler's model exactly as the runner does
(``pydantic.ValidationError`` is raised); the handler's own exceptions propagate.
``context()`` builds a ``JobContext`` when you call the function directly.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sundial.runner import context as context_module
from sundial.runner import registry as registry_module

JobContext = context_module.JobContext


def context(
    *,
    handler: str = "test",
    run_id: str = "test-run",
    attempt: int = 1,
    idempotency_key: str | None = None,
    fire_time: datetime | None = None,
    cancelled: bool = False,
    asynchronous: bool = False,
    fencing_token: int | None = None,
) -> JobContext:
    """A context as the runner would build it; ``cancelled=True`` pre-sets the signal.
    ``fencing_token`` defaults to the attempt, as on PostgreSQL alone."""
    event: asyncio.Event | threading.Event = asyncio.Event() if asynchronous else threading.Event()
    if cancelled:
        event.set()
    return context_module.make(
        handler=handler,
        run_id=run_id,
        attempt=attempt,
        idempotency_key=idempotency_key if idempotency_key is not None else run_id,
        fire_time=fire_time,
        cancel_event=event,
        fencing_token=fencing_token,
    )


def _resolve(
    name: str, args: Mapping[str, Any] | None, registry: registry_module.Registry | None
) -> tuple[registry_module.Handler, Any]:
    handler = (registry or registry_module.default_registry).get(name)
    return handler, handler.validate_args(args or {})


def call(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    registry: registry_module.Registry | None = None,
    **context_fields: Any,
) -> Any:
    """Run a registered handler (async ones through ``asyncio.run``) and return its result."""
    handler, value = _resolve(name, args, registry)
    if handler.is_coroutine:
        return asyncio.run(acall(name, args, registry=registry, **context_fields))
    ctx = context(handler=name, **context_fields)
    return handler.function(value, ctx)


async def acall(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    registry: registry_module.Registry | None = None,
    **context_fields: Any,
) -> Any:
    """Like ``call`` from inside a running event loop."""
    handler, value = _resolve(name, args, registry)
    if not handler.is_coroutine:
        return handler.function(value, context(handler=name, **context_fields))
    ctx = context(handler=name, asynchronous=True, **context_fields)
    return await handler.function(value, ctx)
