"""plan_fires: the whole per-schedule decision the trigger loop makes, tick by tick."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.scheduling import concurrency, cron, plan, quarantine, spread
from sundial.scheduling.concurrency import ConcurrencyPolicy
from sundial.scheduling.missed_fires import MissedFirePolicy, MissedFireRules
from sundial.scheduling.suspension import PauseReason

UID = "0b6c6d2e-41c4-4f0e-9a55-3f6f2d0c9a11"
EVERY_TEN_MINUTES = cron.parse_schedule("*/10 * * * *")
NOON = datetime(2026, 6, 1, 12, tzinfo=UTC)


def run_ticks(policy: ConcurrencyPolicy, run_lasts: timedelta) -> list[plan.FirePlan]:
    """A loop ticking each minute for an hour; each started run stays active for ``run_lasts``."""
    rules = plan.ScheduleRules(concurrency_policy=policy)
    next_fire = NOON
    active_until: list[datetime] = []
    plans = []
    for minute in range(61):
        now = NOON + timedelta(minutes=minute)
        active_until = [end for end in active_until if end > now]
        fire_plan = plan.plan_fires(
            job_identity=UID,
            schedule=EVERY_TEN_MINUTES,
            rules=rules,
            next_fire_time=next_fire,
            now=now,
            active_runs=len(active_until),
        )
        if fire_plan.cancel_active:
            active_until = []
        active_until += [run.run_at + run_lasts for run in fire_plan.runs]
        next_fire = fire_plan.next_fire_time
        if fire_plan.due:
            plans.append(fire_plan)
    return plans


def test_forbid_against_a_long_running_run_skips_fires_until_it_ends() -> None:
    plans = run_ticks(ConcurrencyPolicy.FORBID, run_lasts=timedelta(minutes=25))
    started = [len(p.runs) for p in plans]
    assert started == [1, 0, 0, 1, 0, 0, 1]  # 12:00 runs to 12:25; 12:10, 12:20 skipped ...
    assert sum(p.skipped_by_concurrency for p in plans) == 4
    assert all(concurrency.JOB_ALREADY_ACTIVE in p.events for p in plans if not p.runs)


def test_allow_against_a_long_running_run_starts_every_fire() -> None:
    plans = run_ticks(ConcurrencyPolicy.ALLOW, run_lasts=timedelta(minutes=25))
    assert [len(p.runs) for p in plans] == [1] * 7
    assert not any(p.cancel_active for p in plans)


def test_replace_against_a_long_running_run_cancels_it_each_time() -> None:
    plans = run_ticks(ConcurrencyPolicy.REPLACE, run_lasts=timedelta(minutes=25))
    assert [len(p.runs) for p in plans] == [1] * 7
    assert [p.cancel_active for p in plans] == [False] + [True] * 6


def test_every_fire_is_planned_exactly_once_over_an_hour() -> None:
    plans = run_ticks(ConcurrencyPolicy.ALLOW, run_lasts=timedelta(seconds=1))
    fires = [run.fire_time for p in plans for run in p.runs]
    assert fires == [NOON + timedelta(minutes=10 * k) for k in range(7)]


def test_runs_carry_the_logical_fire_time_and_the_spread_run_at() -> None:
    rules = plan.ScheduleRules(spread_seconds=60)
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=rules,
        next_fire_time=NOON,
        now=NOON,
        active_runs=0,
    )
    (run,) = fire_plan.runs
    assert run.fire_time == NOON
    assert run.run_at == NOON + spread.offset_for(UID, 60)


def test_downtime_with_backfill_under_forbid_starts_only_the_newest() -> None:
    rules = plan.ScheduleRules(
        missed_fire_rules=MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=5),
        concurrency_policy=ConcurrencyPolicy.FORBID,
    )
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=rules,
        next_fire_time=NOON - timedelta(hours=2),
        now=NOON + timedelta(minutes=5),
        active_runs=0,
    )
    assert [run.fire_time for run in fire_plan.runs] == [NOON]
    assert fire_plan.skipped_by_concurrency == 4
    total = fire_plan.ran + fire_plan.backfilled + fire_plan.coalesced + fire_plan.skipped
    assert total == fire_plan.due == 13
    assert plan.MISS_SCHEDULE in fire_plan.events
    assert concurrency.CONCURRENCY_LIMITS_BACKFILL in fire_plan.events


def test_downtime_with_backfill_under_allow_starts_five_and_says_so() -> None:
    rules = plan.ScheduleRules(
        missed_fire_rules=MissedFireRules(MissedFirePolicy.BACKFILL, max_backfill=5),
        concurrency_policy=ConcurrencyPolicy.ALLOW,
    )
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=rules,
        next_fire_time=NOON - timedelta(hours=2),
        now=NOON + timedelta(minutes=5),
        active_runs=0,
    )
    assert len(fire_plan.runs) == 5
    assert (fire_plan.ran, fire_plan.backfilled) == (1, 4)
    assert plan.BACKFILLED in fire_plan.events


def test_a_paused_schedule_plans_nothing_and_keeps_its_next_fire_time() -> None:
    quarantined = quarantine.record_failure(quarantine.QuarantineState(), 1)
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=plan.ScheduleRules(),
        next_fire_time=NOON,
        now=NOON + timedelta(hours=3),
        active_runs=0,
        quarantine_state=quarantined,
    )
    assert fire_plan.paused is PauseReason.QUARANTINED
    assert (fire_plan.runs, fire_plan.next_fire_time) == ((), NOON)


def _after_an_outage(policy: str, max_backfill: int, deadline: int | None) -> plan.FirePlan:
    """Every minute; the trigger was away for 30 minutes and is back 30 s after a fire."""
    now = datetime(2026, 12, 4, 11, 0, 30, tzinfo=UTC)
    return plan.plan_fires(
        job_identity="catch-up",
        schedule=cron.parse_schedule("* * * * *"),
        rules=plan.rules_from_policy(0, "Allow", policy, max_backfill, deadline),
        next_fire_time=now - timedelta(minutes=30),
        now=now,
        active_runs=0,
    )


def test_a_catch_up_window_drops_older_fires_and_the_event_counts_them() -> None:
    """startingDeadlineSeconds is the catch-up window: fires older than it are dropped, each
    counted in the MissSchedule Event; within it missedFirePolicy decides, maxBackfill caps."""
    coalesced = _after_an_outage("Coalesce", 1, 300)
    assert [run.fire_time.strftime("%H:%M") for run in coalesced.runs] == ["11:00"]
    assert (coalesced.due, coalesced.skipped_past_deadline, coalesced.coalesced) == (30, 25, 4)
    assert coalesced.missed_message == (
        "30 fires were due, 29 missed: 25 older than startingDeadlineSeconds (300 s) dropped, "
        "4 coalesced into the run for 2026-12-04T11:00:00Z"
    )
    backfilled = _after_an_outage("Backfill", 3, 300)
    assert [run.fire_time.strftime("%H:%M") for run in backfilled.runs] == [
        "10:58",
        "10:59",
        "11:00",
    ]
    assert backfilled.missed_message == (
        "30 fires were due, 29 missed: 25 older than startingDeadlineSeconds (300 s) dropped, "
        "2 backfilled, 2 beyond maxBackfill (3) skipped; the newest started"
    )
    unbounded = _after_an_outage("Backfill", 10, None)
    assert len(unbounded.runs) == 10 and unbounded.skipped_past_deadline == 0
    assert unbounded.missed_message is not None and "startingDeadlineSeconds" not in (
        unbounded.missed_message
    )
    skipped = _after_an_outage("Skip", 1, 300)
    assert skipped.missed_message == (
        "30 fires were due, 29 missed: 25 older than startingDeadlineSeconds (300 s) dropped, "
        "4 skipped (missedFirePolicy Skip); the newest started"
    )


def simulate_buffer_one(durations: list[timedelta], tick: timedelta) -> dict[str, object]:
    """Fires every 10 minutes for ``len(durations)`` fires; the k-th run started lasts
    ``durations[k]``; the loop ticks every ``tick`` with fake time, as the trigger does."""
    rules = plan.ScheduleRules(concurrency_policy=ConcurrencyPolicy.BUFFER_ONE)
    next_fire, waiting = NOON, None
    active: list[tuple[datetime, datetime]] = []  # (start, end) of every started run
    started: list[datetime] = []
    skipped = buffered = released = due = 0
    now = NOON
    end = NOON + timedelta(minutes=10 * len(durations))
    max_waiting_age = timedelta(0)
    while now < end + timedelta(days=1) and (now < end or waiting is not None):
        running = [run for run in active if run[0] <= now < run[1]]
        fire_plan = plan.plan_fires(
            job_identity=UID,
            schedule=EVERY_TEN_MINUTES,
            rules=rules,
            next_fire_time=next_fire if now < end else end + timedelta(days=2),
            now=now,
            active_runs=len(running),
            buffered_fire_time=waiting,
        )
        assert (
            fire_plan.ran
            + fire_plan.backfilled
            + fire_plan.coalesced
            + (fire_plan.skipped + fire_plan.buffered)
            == fire_plan.due
        )
        for run in fire_plan.runs:
            assert not running, "a run started beside an active one"
            assert run.run_at <= now + timedelta(seconds=1)
            length = durations[len(started)] if len(started) < len(durations) else tick
            active.append((now, now + length))
            started.append(run.fire_time)
        if waiting is not None and fire_plan.released:
            # It starts on the first tick that finds nothing active.
            ended = max(run[1] for run in active[:-1])
            assert now - ended < tick
            max_waiting_age = max(max_waiting_age, now - waiting)
        waiting = fire_plan.buffered_fire_time
        due += fire_plan.due
        skipped += fire_plan.skipped
        buffered += fire_plan.buffered
        released += fire_plan.released
        if now < end:
            next_fire = fire_plan.next_fire_time
        now += tick
    return {
        "started": started,
        "skipped": skipped,
        "buffered": buffered,
        "released": released,
        "due": due,
        "waiting": waiting,
    }


def test_buffer_one_runs_one_at_a_time_and_starts_the_waiting_fire_when_the_run_ends() -> None:
    # 12:00 runs 25 min: 12:10 waits, 12:20 is skipped; 12:10 starts at 12:25 and runs 2 min;
    # 12:30 and later find nothing active.
    minutes = [25, 2, 1, 1, 1, 1]
    outcome = simulate_buffer_one([timedelta(minutes=m) for m in minutes], timedelta(seconds=5))
    assert outcome["started"] == [NOON + timedelta(minutes=m) for m in (0, 10, 30, 40, 50)]
    assert (outcome["skipped"], outcome["buffered"], outcome["released"]) == (1, 1, 1)


def test_buffer_one_never_loses_a_fire_it_did_not_count_whatever_the_run_lengths() -> None:
    import random

    generator = random.Random(20261204)
    for _ in range(60):
        durations = [timedelta(seconds=generator.randint(1, 3000)) for _ in range(12)]
        outcome = simulate_buffer_one(durations, timedelta(seconds=generator.choice([7, 30, 60])))
        started = outcome["started"]
        assert isinstance(started, list)
        # Every fire was started once or skipped, and a fire that waited started later.
        assert outcome["due"] == 12
        assert len(started) + outcome["skipped"] == 12  # type: ignore[operator]
        assert outcome["buffered"] == outcome["released"]
        assert outcome["waiting"] is None
        assert started == sorted(set(started))


def test_a_paused_buffer_one_schedule_keeps_its_waiting_fire() -> None:
    waiting = NOON - timedelta(minutes=10)
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=plan.ScheduleRules(concurrency_policy=ConcurrencyPolicy.BUFFER_ONE),
        next_fire_time=NOON,
        now=NOON,
        active_runs=0,
        suspend=True,
        buffered_fire_time=waiting,
    )
    assert (fire_plan.runs, fire_plan.buffered_fire_time) == ((), waiting)


def test_a_waiting_fire_is_dropped_when_the_policy_is_no_longer_buffer_one() -> None:
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=plan.ScheduleRules(concurrency_policy=ConcurrencyPolicy.FORBID),
        next_fire_time=NOON + timedelta(minutes=10),
        now=NOON,
        active_runs=0,
        buffered_fire_time=NOON - timedelta(minutes=10),
    )
    assert (fire_plan.runs, fire_plan.buffered_fire_time) == ((), None)


def test_a_waiting_fire_starts_due_now_not_at_its_old_fire_time() -> None:
    waiting = NOON - timedelta(minutes=10)
    now = NOON - timedelta(minutes=3)
    fire_plan = plan.plan_fires(
        job_identity=UID,
        schedule=EVERY_TEN_MINUTES,
        rules=plan.ScheduleRules(concurrency_policy=ConcurrencyPolicy.BUFFER_ONE),
        next_fire_time=NOON,
        now=now,
        active_runs=0,
        buffered_fire_time=waiting,
    )
    assert fire_plan.runs == (plan.PlannedRun(waiting, now),)
    assert (fire_plan.released, fire_plan.due, fire_plan.ran, fire_plan.backfilled) == (1, 0, 0, 0)
