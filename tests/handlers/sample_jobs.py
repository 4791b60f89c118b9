"""Handlers the runner tests execute, in this process and in child processes.

Importable as ``handlers.sample_jobs`` with ``tests/`` on the path (pytest puts it there;
child processes inherit it through ``sys.path`` for spawn, or ``PYTHONPATH``).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import pathlib
import resource
import threading
import time
from typing import Any

import pydantic

import sundial

# Test-only gates a thread handler blocks on, released by the test (same process only).
GATES: dict[str, threading.Event] = {}


class Sleep(pydantic.BaseModel):
    seconds: float = 0.0


class Gate(pydantic.BaseModel):
    gate: str


class PidFile(pydantic.BaseModel):
    pid_file: str
    seconds: float = 60.0


class Report(pydantic.BaseModel):
    day: pydantic.PastDate
    pages: int = pydantic.Field(ge=1)


@sundial.job("sample.async_ok")
async def async_ok(args: dict[str, Any], ctx: sundial.JobContext) -> str:
    ctx.logger.info("hello from %s", ctx.run_id)
    return f"{ctx.run_id}/{ctx.attempt}/{ctx.idempotency_key}"


@sundial.job("sample.async_fail")
async def async_fail(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise ValueError("async handler exploded")


@sundial.job("sample.async_sleep", args_model=Sleep)
async def async_sleep(args: Sleep, ctx: sundial.JobContext) -> None:
    await asyncio.sleep(args.seconds)


@sundial.job("sample.async_block", args_model=Sleep)
async def async_block(args: Sleep, ctx: sundial.JobContext) -> None:
    time.sleep(args.seconds)  # noqa: ASYNC251 (deliberately blocks the event loop)


@sundial.job("sample.report", execution_model="thread", args_model=Report, dependency="reports-db")
def report(args: Report, ctx: sundial.JobContext) -> str:
    return f"{args.day.isoformat()}:{args.pages}"


@sundial.job("sample.thread_ok", execution_model="thread")
def thread_ok(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    assert threading.current_thread() is not threading.main_thread()


@sundial.job("sample.thread_fail", execution_model="thread")
def thread_fail(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise RuntimeError("thread handler exploded")


@sundial.job("sample.thread_gate", execution_model="thread", args_model=Gate)
def thread_gate(args: Gate, ctx: sundial.JobContext) -> None:
    """Ignores cancellation on purpose: it returns only when the test opens its gate."""
    GATES[args.gate].wait(timeout=60)


@sundial.job("sample.thread_cooperative", execution_model="thread")
def thread_cooperative(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    ctx.cancel_event.wait(60)  # type: ignore[union-attr]


@sundial.job("sample.process_ok", execution_model="process")
def process_ok(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    assert ctx.attempt >= 1


@sundial.job("sample.process_fail", execution_model="process")
def process_fail(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise KeyError("process handler exploded")


@sundial.job("sample.process_exit", execution_model="process")
def process_exit(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    os._exit(1)


@sundial.job("sample.process_segfault", execution_model="process")
def process_segfault(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file for a deliberate crash
    ctypes.string_at(0)


@sundial.job("sample.process_spin", execution_model="process", args_model=Sleep)
def process_spin(args: Sleep, ctx: sundial.JobContext) -> int:
    deadline = time.monotonic() + args.seconds
    count = 0
    while time.monotonic() < deadline:
        count += 1
    return count


@sundial.job("sample.process_sleep", execution_model="process", args_model=Sleep)
def process_sleep(args: Sleep, ctx: sundial.JobContext) -> None:
    time.sleep(args.seconds)


@sundial.job("sample.sub_ok", execution_model="subprocess")
def sub_ok(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    assert ctx.run_id == "run-sub" and ctx.attempt == 3, (ctx.run_id, ctx.attempt)


@sundial.job("sample.sub_async_ok", execution_model="subprocess")
async def sub_async_ok(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    await asyncio.sleep(0)


@sundial.job("sample.sub_fail", execution_model="subprocess")
def sub_fail(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise RuntimeError("subprocess handler exploded")


@sundial.job("sample.sub_stubborn", execution_model="subprocess", args_model=PidFile)
def sub_stubborn(args: PidFile, ctx: sundial.JobContext) -> None:
    """Ignores its cancellation signal: only SIGKILL ends it."""
    pathlib.Path(args.pid_file).write_text(str(os.getpid()))
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)


@sundial.job("sample.sub_cooperative", execution_model="subprocess", args_model=PidFile)
def sub_cooperative(args: PidFile, ctx: sundial.JobContext) -> None:
    pathlib.Path(args.pid_file).write_text(str(os.getpid()))
    ctx.cancel_event.wait(args.seconds)  # type: ignore[union-attr]


@sundial.job("sample.echo_context", execution_model="subprocess")
def echo_context(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    pathlib.Path(args["out"]).write_text(
        f"{ctx.run_id}|{ctx.attempt}|{ctx.idempotency_key}|{ctx.fire_time}|{args.get('n')}"
        + ("" if ctx.namespace is None else f"|{ctx.namespace}")
    )


@sundial.job("sample.echo_token", execution_model="subprocess")
def echo_token(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    pathlib.Path(args["out"]).write_text(f"{ctx.attempt} {ctx.fencing_token}")


@sundial.job("sample.env_probe", execution_model="subprocess")
def env_probe(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    pathlib.Path(args["out"]).write_text("\n".join(sorted(os.environ)))


@sundial.job("sample.sub_logs", execution_model="subprocess")
def sub_logs(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    ctx.logger.info("starting %s", "the report", extra={"pages": 3})
    ctx.logger.warning("page 2 is empty")
    ctx.logger.debug("not shown at the default level")


@sundial.job("sample.sub_async_logs", execution_model="subprocess")
async def sub_async_logs(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    ctx.logger.info("async hello")
    await asyncio.sleep(0)
    raise RuntimeError("failed after logging")
