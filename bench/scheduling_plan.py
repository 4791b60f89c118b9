"""How long the pure scheduling layer takes for 10,000 schedules due on the same minute, and
for one minute schedule resumed after a year (``missed_fires.decide``, counts capped).

Not a test: prints figures. The trigger loop's database work comes on top of this.

    .venv/bin/python bench/scheduling_plan.py
"""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

from sundial.scheduling import cron, missed_fires, plan

SCHEDULES = 10_000
TOP_OF_HOUR = datetime(2026, 6, 1, 10, tzinfo=UTC)


def main() -> None:
    uids = [uuid.uuid5(uuid.NAMESPACE_URL, f"bench/job-{i}") for i in range(SCHEDULES)]
    started = time.perf_counter()
    schedules = [cron.parse_schedule("0 * * * *", "Europe/Berlin") for _ in uids]
    parse_seconds = time.perf_counter() - started
    rules = plan.ScheduleRules(spread_seconds=60)
    for label, now in (
        ("on time", TOP_OF_HOUR + timedelta(seconds=2)),
        ("2 h late", TOP_OF_HOUR + timedelta(hours=2, seconds=2)),
    ):
        samples = []
        for uid, schedule in zip(uids, schedules, strict=True):
            tick = time.perf_counter()
            plan.plan_fires(
                job_identity=uid,
                schedule=schedule,
                rules=rules,
                next_fire_time=TOP_OF_HOUR,
                now=now,
                active_runs=0,
            )
            samples.append(time.perf_counter() - tick)
        quantiles = statistics.quantiles(samples, n=100)
        print(
            f"plan_fires x {SCHEDULES} ({label}): total {sum(samples):.3f} s, "
            f"p50 {quantiles[49] * 1e6:.0f} us, p99 {quantiles[98] * 1e6:.0f} us"
        )
    print(f"parse_schedule x {SCHEDULES}: {parse_seconds:.3f} s")
    every_minute = cron.parse_schedule("* * * * *")
    tick = time.perf_counter()
    decision = missed_fires.decide(
        every_minute, TOP_OF_HOUR - timedelta(days=365), TOP_OF_HOUR, missed_fires.MissedFireRules()
    )
    print(
        f"missed_fires.decide, a year of minutely fires: {time.perf_counter() - tick:.3f} s"
        f" (due counted to {decision.due}, capped: {decision.counts_capped})"
    )
    print("command: .venv/bin/python bench/scheduling_plan.py")


if __name__ == "__main__":
    main()
