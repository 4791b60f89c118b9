"""The handlers the demo runs: one async, one in a thread.

    sundial runner --dsn "$SUNDIAL_DSN" --handlers hello   # with examples/handlers on PYTHONPATH

``examples.hello`` is the handler ``examples/scheduledjob-hello.yaml`` names. Handlers
receive their args (a pydantic model when one is declared) and a ``JobContext``: run id,
attempt and its fencing token, the per-run idempotency key, the fire time, a cancellation
signal and a logger.
"""

from __future__ import annotations

import time

import pydantic

import sundial


class Greeting(pydantic.BaseModel):
    greeting: str = "Hello"
    name: str = "world"


@sundial.job("examples.hello", args_model=Greeting)
async def hello(args: Greeting, ctx: sundial.JobContext) -> None:
    ctx.logger.info(
        "%s, %s (run %s, attempt %s)", args.greeting, args.name, ctx.run_id, ctx.attempt
    )


@sundial.job("examples.hello_thread", execution_model="thread", args_model=Greeting)
def hello_thread(args: Greeting, ctx: sundial.JobContext) -> None:
    # Blocking calls are fine in a thread handler; check ctx.cancelled() in long loops.
    time.sleep(0.1)
    ctx.logger.info("%s from a thread, %s (run %s)", args.greeting, args.name, ctx.run_id)


@sundial.job("examples.flaky")
async def flaky(args: dict[str, object], ctx: sundial.JobContext) -> None:
    # Fails its first attempt on purpose, so the demo shows a retry: attempt 2 succeeds.
    # Pass ctx.fencing_token (it only grows) with ctx.idempotency_key to side effects.
    if ctx.attempt == 1:
        raise RuntimeError("the first attempt fails on purpose; the retry will succeed")
    ctx.logger.info("succeeded on attempt %s (run %s)", ctx.attempt, ctx.run_id)


@sundial.job("examples.extract", execution_model="thread")
def extract(args: dict[str, object], ctx: sundial.JobContext) -> None:
    # The first step of examples/jobrun-dag.yaml and examples/demo/dag.yaml.
    time.sleep(0.5)
    ctx.logger.info("extracted (run %s, key %s)", ctx.run_id, ctx.idempotency_key)


@sundial.job("examples.load")
async def load(args: dict[str, object], ctx: sundial.JobContext) -> None:
    # Starts only once the runs it dependsOn succeeded.
    ctx.logger.info("loaded (run %s)", ctx.run_id)
