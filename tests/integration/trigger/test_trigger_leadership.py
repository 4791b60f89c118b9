"""The leader lease: only its holder ticks; a successor takes over with a higher epoch; the
standalone ``sundial scheduler`` command runs the same loop."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.scheduler import trigger
from sundial.scheduling import clock
from sundial.store import claims, pool, schedules
from support.trigger import START, UNPACED, add_schedule, fire_times


async def test_only_the_lease_holder_fires_and_a_successor_resumes(
    pool: pool.Pool, store_dsn: str, manual_clock: clock.ManualClock
) -> None:
    uid = await add_schedule(pool, START, "* * * * *", concurrency_policy="Allow")
    first = trigger.TriggerLoop(pool, clock=manual_clock, holder="first", settings=UNPACED)
    second = trigger.TriggerLoop(pool, clock=manual_clock, holder="second", settings=UNPACED)

    manual_clock.set(START + timedelta(minutes=1))
    await first.step()
    await second.step()
    assert first.lease is not None and second.lease is None
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=1)]

    # The leader stops (releasing its lease); the standby takes over where it left off.
    stop = asyncio.Event()
    stop.set()
    await first.run(stop)
    manual_clock.set(START + timedelta(minutes=2))
    await second.step()
    assert second.lease is not None and second.lease.epoch == first.lease.epoch + 1
    assert fire_times(store_dsn, uid) == [START + timedelta(minutes=k) for k in (1, 2)]


async def test_the_logs_say_who_leads_who_stands_by_and_who_takes_over(
    pool: pool.Pool,
    store_dsn: str,
    manual_clock: clock.ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = trigger.TriggerLoop(pool, clock=manual_clock, holder="first", settings=UNPACED)
    second = trigger.TriggerLoop(pool, clock=manual_clock, holder="second", settings=UNPACED)

    def said() -> list[tuple[str, str]]:
        found = [
            (str(getattr(r, "holder", "")), r.getMessage())
            for r in caplog.records
            if r.name == "sundial.trigger"
        ]
        caplog.clear()
        return found

    with caplog.at_level(logging.INFO, logger="sundial"):
        await first.step()
        await second.step()
        await first.step()
        await second.step()  # no change: nothing more is said
        assert said() == [
            ("first", "leading"),
            ("second", "standing by"),
        ]
        stop = asyncio.Event()
        stop.set()
        await first.run(stop)  # releases the lease
        await second.step()
        await first.step()
        assert said() == [
            ("first", "stopped; resigned the lease"),
            ("second", "taking over"),
            ("first", "standing by"),
        ]
        # A leader whose lease ran out while it was away hears it on its next step.
        with psycopg.connect(store_dsn) as conn:
            conn.execute("UPDATE leader_leases SET holder = 'third', epoch = epoch + 1")
        await second.step()
        assert said() == [("second", "lost the lease; standing by")]


async def test_step_wakes_at_the_next_fire_or_the_poll_interval(
    pool: pool.Pool, manual_clock: clock.ManualClock
) -> None:
    await add_schedule(pool, START, "*/5 * * * *")
    settings = trigger.TriggerSettings(fires_per_second=None, poll_interval=timedelta(minutes=10))
    loop = trigger.TriggerLoop(pool, clock=manual_clock, settings=settings)
    assert await loop.step() == START + timedelta(minutes=5)


def test_scheduler_command_fires_due_schedules_and_promotes_them(store_dsn: str) -> None:
    async def prepare() -> object:
        opened = await pool.open_pool(store_dsn)
        try:
            # Due two minutes ago by the real clock; the command uses the system clock.
            ago = datetime.now(UTC) - timedelta(minutes=2)
            return await add_schedule(opened, ago, "* * * * *")
        finally:
            await opened.close()

    uid = asyncio.run(prepare())
    result = CliRunner().invoke(cli.main, ["scheduler", "--dsn", store_dsn, "--once"])
    assert result.exit_code == 0, result.output
    assert "one step done as leader" in result.output
    [fire] = fire_times(store_dsn, uid)  # type: ignore[arg-type]

    async def check() -> None:
        opened = await pool.open_pool(store_dsn)
        try:
            info = await schedules.get(opened, uid)  # type: ignore[arg-type]
            assert info is not None and info.next_fire_time > fire
            assert info.fires_total == 1
            [run] = await claims.claim(opened, "worker-1")  # due now: pending and claimable
            assert run.schedule_id == uid and run.fire_time == fire
        finally:
            await opened.close()

    asyncio.run(check())
