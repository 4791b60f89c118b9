"""What idle `sundial runner` processes cost, on PostgreSQL alone and on the Redis hot queue.

Not a test: it prints one table. A runner with nothing to do still polls: its claim loop, its
heartbeats and announcements, and on the hot queue its relay and its Redis claims. A fleet sized
for its peak is idle most of the day, so this is a cost paid all day, per runner. For each
runner count and mode: a fresh database with one job and no runs, the runners started, then
after ``--settle`` seconds the CPU (utime + stime from /proc) of PostgreSQL (the postmaster and
every child), of Redis and of the runners over ``--seconds``, in milliseconds of CPU per second.

    .venv/bin/python bench/idle_cost.py [--runners 2,4] [--seconds 10] [--settle 8]
"""

from __future__ import annotations

import argparse
import sys
import time

import redis
import stack

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.store.hot_queue import outbox


def leg(
    server: object, runners: int, hot: ThrowawayRedis | None, settle: float, seconds: float
) -> list[float]:
    name = f"idle_{runners}" + ("_hot" if hot is not None else "")
    dsn = stack.create_database(server, name)  # type: ignore[arg-type]
    stack.create_job(dsn, "noop", "bench.noop")
    extra: list[str] = []
    if hot is not None:
        with redis.Redis.from_url(hot.url) as connection:
            connection.flushall()
        outbox.switch(dsn, on=True)
        extra = ["--hot-queue-url", hot.url]
    group = stack.Processes(dsn, label=name)

    def cpu() -> tuple[float, float, float]:
        postgres = sum(stack.cpu_seconds(p) for p in stack.postgres_pids(server))  # type: ignore[arg-type]
        redis_cpu = 0.0
        if hot is not None and hot.process is not None:
            redis_cpu = stack.cpu_seconds(hot.process.pid)
        return postgres, redis_cpu, sum(stack.cpu_seconds(pid) for pid in group.pids())

    try:
        started = [group.runner(async_slots=100, extra=extra) for _ in range(runners)]
        time.sleep(settle)
        if any(child.poll() is not None for child in started):
            raise RuntimeError(f"a runner exited; see the logs in {group.log_dir}")
        before = cpu()
        time.sleep(seconds)
        after = cpu()
    finally:
        group.stop_all()
    return [(b - a) * 1000 / seconds for a, b in zip(before, after, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runners", default="2,4")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds before measuring")
    options = parser.parse_args()
    rows = []
    with stack.throwaway() as server, throwaway_redis() as hot:
        for runners in (int(n) for n in options.runners.split(",")):
            for mode, redis_server in (("postgresql", None), ("hot queue", hot)):
                postgres, redis_cpu, runner_cpu = leg(
                    server, runners, redis_server, options.settle, options.seconds
                )
                rows.append(
                    [runners, mode, f"{postgres:.1f}", f"{redis_cpu:.1f}", f"{runner_cpu:.1f}",
                     f"{runner_cpu / runners:.1f}", stack.load_average()]
                )  # fmt: skip
    headers = ["runners", "mode", "postgres ms/s", "redis ms/s", "runners ms/s",
               "per runner ms/s", "load after"]  # fmt: skip
    print()
    print(f"idle runners, CPU over {options.seconds:g} s after {options.settle:g} s to settle")
    print(stack.table(headers, rows))
    print(
        f"reproduce: .venv/bin/python bench/idle_cost.py --runners {options.runners} "
        f"--seconds {options.seconds:g} --settle {options.settle:g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
