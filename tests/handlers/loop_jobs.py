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


@sundial.job("loop.record_token")
async def record_token(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Appends "run_id attempt fencing_token" to args["path"], as ``loop.record`` does."""
    fd = os.open(args["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.run_id} {ctx.attempt} {ctx.fencing_token}\n".encode())
    finally:
        os.close(fd)


@sundial.job("loop.record_after")
async def record_after(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Sleeps ``args["seconds"]``, then appends "run_id attempt pid" to ``args["path"]``: which
    runner process ran which attempt, for tests that tell runners apart."""
    await asyncio.sleep(float(args.get("seconds", 0.5)))
    fd = os.open(args["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.run_id} {ctx.attempt} {os.getpid()}\n".encode())
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


@sundial.job("loop.raise_message")
async def raise_message(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Fails with ``args["message"]`` as its error text: what a handler's own words leak."""
    raise RuntimeError(str(args["message"]))


@sundial.job("loop.flaky_downstream", dependency="flaky-api")
async def flaky_downstream(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise ConnectionError("flaky-api is down")


@sundial.job("loop.budgeted", dependency="budget-api")
async def budgeted(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Fails its first attempt when ``args["fail"]``; every retry succeeds."""
    if args.get("fail") and ctx.attempt == 1:
        raise ConnectionError("budget-api answered 503")


@sundial.job("loop.registered_timeout", timeout_seconds=2)
async def registered_timeout(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Registered with a 2 s timeout; sleeps ``args["seconds"]`` (default 30)."""
    await asyncio.sleep(float(args.get("seconds", 30.0)))


@sundial.job("loop.thread_record", execution_model="thread")
def thread_record(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """A thread handler, as the README's: appends "run_id attempt" to args["path"]."""
    with open(args["path"], "a", encoding="utf-8") as file:
        file.write(f"{ctx.run_id} {ctx.attempt}\n")


@sundial.job("loop.record_namespace", execution_model="thread")
def record_namespace(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Appends "run_id namespace" to args["path"]: which tenant's run this runner ran."""
    with open(args["path"], "a", encoding="utf-8") as file:
        file.write(f"{ctx.run_id} {ctx.namespace}\n")


def _write_pid(directory: str, name: str) -> None:
    path = os.path.join(directory, f"{name}.pid")
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        file.write(str(os.getpid()))
    os.replace(path + ".tmp", path)


@sundial.job("loop.process_pid", execution_model="process")
def process_pid(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Writes its worker's pid to ``args["dir"]``/process.pid, then works for a long time."""
    _write_pid(args["dir"], "process")
    time.sleep(float(args.get("seconds", 120.0)))


@sundial.job("loop.subprocess_pid", execution_model="subprocess")
def subprocess_pid(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Writes its pid and a grandchild's pid to ``args["dir"]``, then works for a long time."""
    import subprocess
    import sys

    grandchild = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL
    )
    with open(os.path.join(args["dir"], "grandchild.pid"), "w", encoding="utf-8") as file:
        file.write(str(grandchild.pid))
    _write_pid(args["dir"], "subprocess")
    time.sleep(float(args.get("seconds", 120.0)))


@sundial.job("loop.kill_runner")
async def kill_runner(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Kills the runner it runs in (an async handler runs in the runner's own process)."""
    import signal

    if args.get("path"):
        await record(args, ctx)
    os.kill(os.getpid(), signal.SIGKILL)


@sundial.job("loop.subprocess_env", execution_model="subprocess")
def subprocess_env(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Writes the environment it was given to ``args["path"]`` as JSON."""
    import json

    with open(args["path"], "w", encoding="utf-8") as file:
        json.dump(dict(os.environ), file)


@sundial.job("loop.subprocess_stubborn", execution_model="subprocess", kill_grace_seconds=1)
def subprocess_stubborn(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Ignores SIGTERM and sleeps: only SIGKILL, after its 1 s kill grace, stops it."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(float(args.get("seconds", 60.0)))


def _write_times(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Appends "run_id run_at started_at" (ISO 8601) to args["path"]."""
    assert ctx.run_at is not None and ctx.started_at is not None
    with open(args["path"], "a", encoding="utf-8") as file:
        file.write(f"{ctx.run_id} {ctx.run_at.isoformat()} {ctx.started_at.isoformat()}\n")


@sundial.job("loop.times_async")
async def times_async(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    _write_times(args, ctx)


@sundial.job("loop.times_thread", execution_model="thread")
def times_thread(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    _write_times(args, ctx)


@sundial.job("loop.times_process", execution_model="process")
def times_process(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    _write_times(args, ctx)


@sundial.job("loop.times_subprocess", execution_model="subprocess")
def times_subprocess(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    _write_times(args, ctx)


@sundial.job("loop.trespass", execution_model="thread")
def trespass(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Handler code gone bad: with its runner's own database login (the DSN on the runner's
    command line), it tries to read, cancel and add to another namespace's runs, and writes
    what each try got to args["out"] as JSON."""
    import json
    import sys

    import psycopg

    dsn = sys.argv[sys.argv.index("--dsn") + 1]
    victim = int(args["victim"])
    got: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        got["read"] = conn.execute("SELECT args FROM job_runs WHERE id = %s", (victim,)).fetchall()
        got["cancelled"] = conn.execute(
            "UPDATE job_runs SET state = 'cancelled', finished_at = now() WHERE id = %s",
            (victim,),
        ).rowcount
        role = conn.execute(
            "SELECT rolname FROM pg_roles r JOIN pg_auth_members m ON m.roleid = r.oid"
            " WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchone()
        conn.execute(f'SET ROLE "{role[0]}"')  # type: ignore[index]
        got["cancelled_as_group"] = conn.execute(
            "UPDATE job_runs SET state = 'cancelled', finished_at = now() WHERE id = %s",
            (victim,),
        ).rowcount
        conn.execute("RESET ROLE")
        try:
            conn.execute(
                "INSERT INTO job_runs (job_id, queue, handler, state, priority, run_at,"
                " dispatch_key, args, namespace, timeout_seconds, max_retries,"
                " backoff_base_seconds, backoff_cap_seconds)"
                " SELECT job_id, queue, handler, 'pending', priority, now(), dispatch_key,"
                " '{}', %s, 60, 0, 0, 0 FROM job_runs WHERE id = %s",
                (args["victim_namespace"], ctx.run_id),
            )
            got["inserted"] = "yes"
        except psycopg.Error as error:
            got["inserted"] = type(error).__name__
    with open(args["out"], "w", encoding="utf-8") as file:
        json.dump(got, file)
