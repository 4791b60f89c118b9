"""Executor overhead without the database: no-op handlers through each executor.

Not a test: it prints figures. It bounds what the claim loop can reach per runner process
before PostgreSQL enters the picture (bench/runner_throughput.py measures the full protocol).

    PYTHONPATH=tests .venv/bin/python bench/runner_executors.py [--jobs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import handlers.sample_jobs  # noqa: F401  (registers the sample handlers)
from sundial.runner import invocation, registry
from sundial.runner.executors import async_executor, process_executor, thread_executor


async def measure(executor: object, handler: str, jobs: int, concurrency: int) -> float:
    run = executor.run  # type: ignore[attr-defined]
    semaphore = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with semaphore:
            await run(
                invocation.Invocation(
                    handler=handler, run_id=str(number), attempt=1, idempotency_key=str(number)
                )
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(number) for number in range(jobs)))
    return jobs / (time.perf_counter() - started)


async def main(jobs: int) -> None:
    handlers = registry.default_registry
    cases = [
        ("async", async_executor.AsyncExecutor(handlers), "sample.async_ok", 256),
        (
            "thread",
            thread_executor.ThreadExecutor(handlers, max_workers=16),
            "sample.thread_ok",
            16,
        ),
        (
            "process",
            process_executor.ProcessExecutor(handlers, max_workers=2),
            "sample.process_ok",
            4,
        ),
    ]
    for name, executor, handler, concurrency in cases:
        count = jobs if name != "process" else max(jobs // 10, 50)
        await measure(executor, handler, min(count, 50), concurrency)  # warm up
        rate = await measure(executor, handler, count, concurrency)
        print(f"{name:8s} {count:6d} no-op jobs  {rate:10.0f} jobs/s")
        await executor.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000)
    asyncio.run(main(parser.parse_args().jobs))
