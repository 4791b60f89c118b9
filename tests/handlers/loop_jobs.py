"""Handlers the `sundial runner` process tests run (tests/integration/runner_loop).

Loaded by real runner processes with ``--handlers handlers.loop_jobs`` and ``tests/`` on
PYTHONPATH. Small on purpose: every runner that loads a module with a process handler starts
a process pool.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pydantic

import sundial


@sundial.job("loop.noop")
async def noop(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    return None


@sundial.job("loop.record")
async def record(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Appends "run_id attempt" to args["path"]: one short O_APPEND write, so lines never mix."""
    fd = os.open(args["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.run_id} {ctx.attempt}\n".encode())
    finally:
        os.close(fd)


@sundial.job("loop.sleep")
async def sleep(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    await asyncio.sleep(float(args.get("seconds", 1.0)))


@sundial.job("loop.block")
async def block(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    time.sleep(float(args.get("seconds", 1.0)))  # noqa: ASYNC251 (blocks the loop on purpose)


@sundial.job("loop.thread_sleep", execution_model="thread")
def thread_sleep(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    time.sleep(float(args.get("seconds", 1.0)))  # ignores cancellation: its slot leaks


@sundial.job("loop.process_sleep", execution_model="process")
def process_sleep(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    time.sleep(float(args.get("seconds", 1.0)))


@sundial.job("loop.process_spin", execution_model="process")
def process_spin(args: dict[str, Any], ctx: sundial.JobContext) -> int:
    deadline = time.monotonic() + float(args.get("seconds", 1.0))
    count = 0
    while time.monotonic() < deadline:
        count += 1
    return count


@sundial.job("loop.process_noop", execution_model="process")
def process_noop(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    return None


@sundial.job("loop.process_exit", execution_model="process")
def process_exit(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    os._exit(7)


@sundial.job("loop.subprocess_sleep", execution_model="subprocess")
def subprocess_sleep(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    time.sleep(float(args.get("seconds", 1.0)))


class Count(pydantic.BaseModel):
    count: int


@sundial.job("loop.typed", args_model=Count)
async def typed(args: Count, ctx: sundial.JobContext) -> None:
    return None


@sundial.job("loop.raise")
async def explode(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise ValueError(f"attempt {ctx.attempt} exploded")


@sundial.job("loop.flaky_downstream", dependency="flaky-api")
async def flaky_downstream(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise ConnectionError("flaky-api is down")


@sundial.job("loop.budgeted", dependency="budget-api")
async def budgeted(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Fails its first attempt when ``args["fail"]``; every retry succeeds."""
    if args.get("fail") and ctx.attempt == 1:
        raise ConnectionError("budget-api answered 503")
