"""Handlers the operator's cluster tests run in a real ``sundial runner`` process.

Loaded with ``--handlers handlers.operator_jobs`` and ``tests/`` on PYTHONPATH. Each appends
"run_id attempt" to the file named by ``SUNDIAL_TEST_RECORD`` (when set), so a test can see
that the runner, not something else, executed the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

import sundial


def _record(ctx: sundial.JobContext) -> None:
    path = os.environ.get("SUNDIAL_TEST_RECORD")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.run_id} {ctx.attempt}\n".encode())
    finally:
        os.close(fd)


@sundial.job("tests.ok")
async def ok(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    await asyncio.sleep(0)
    _record(ctx)


@sundial.job("tests.until_cancelled")
async def until_cancelled(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Records that it started, then waits for its cancellation (the runner sets the event when
    a heartbeat says the run was cancelled), at most ``args["seconds"]`` (120 by default)."""
    _record(ctx)
    assert isinstance(ctx.cancel_event, asyncio.Event)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ctx.cancel_event.wait(), timeout=float(args.get("seconds", 120)))


@sundial.job("tests.downstream", dependency="test-downstream")
async def downstream(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Calls the downstream ``test-downstream``, which is down while the file named by
    ``args["down"]`` exists: each call fails as a refused connection would."""
    _record(ctx)
    if await asyncio.to_thread(os.path.exists, str(args["down"])):
        raise ConnectionError("test-downstream refused the connection")
