"""The maintainer's key retention against a real PostgreSQL.

Idempotency keys and schedule fire keys are written by the real submit path; some are then
aged (``created_at`` moved back, as the database clock would have written it days ago) and
some of their runs finished and archived through the real claim, finish and archive paths. A
key goes only when it is older than the key retention and its run has left the hot table; a
recent key, and an old key whose run is still live, stay. Passes are bounded by the batch
settings. A submission repeated with a kept key returns its run; with a deleted key it makes a
new run, which is what the retention trades for its disk (docs/adr/0034-key-retention.md).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY

from sundial.attempt import finishes
from sundial.scheduler import maintainer, trigger
from sundial.scheduling import clock as clocks
from sundial.store import claims, leases, maintenance, runs
from sundial.store import pool as store_pool
from support.maintainer import HOLDER

RETENTION = timedelta(days=7)
#: Written this long ago: well inside, or past, the key retention.
RECENT = (timedelta(0), timedelta(hours=3), timedelta(days=6))
OLD = (timedelta(days=8), timedelta(days=40))


def _counter(kind: str) -> float:
    return REGISTRY.get_sample_value("sundial_maintainer_keys_expired_total", {"kind": kind}) or 0


def _schedule(dsn: str, job: uuid.UUID) -> uuid.UUID:
    schedule = uuid.uuid4()
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO schedules (id, job_id, cron, timezone, next_fire_time, suspended)"
            " VALUES (%s, %s, '* * * * *', 'UTC', now() + interval '1 day', true)",
            (schedule, job),
        )
    return schedule


def _age(dsn: str, table: str, column: str, values: Mapping[Any, timedelta]) -> None:
    with psycopg.connect(dsn) as conn:
        for value, ago in values.items():
            conn.execute(
                f"UPDATE {table} SET created_at = now() - %s WHERE {column} = %s", (ago, value)
            )


def _keys(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute("SELECT key FROM idempotency_keys").fetchall()}


def _fires(dsn: str) -> set[datetime]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute("SELECT fire_time FROM schedule_fires").fetchall()}


async def _finish_and_archive(pool: store_pool.Pool, run_ids: set[int]) -> None:
    """Claim every pending run, complete those in ``run_ids``, release the others' leases by
    letting them run on (they stay live), then archive every finished run."""
    claimed = await claims.claim(pool, "key-test", queues=["default"], limit=10_000)
    done = [finishes.succeeded(c) for c in claimed if c.id in run_ids]
    assert len(done) == len(run_ids)
    if done:
        await claims.finish(pool, "key-test", done)
    while await maintenance.archive_finished(pool, older_than_seconds=0):
        pass


@pytest.mark.parametrize("seed", range(4))
async def test_old_keys_of_archived_runs_go_and_recent_or_live_ones_stay(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID, seed: int
) -> None:
    rng = random.Random(seed)
    schedule = _schedule(store_dsn, job)
    first_fire = datetime(2026, 1, 1, tzinfo=UTC)
    key_runs: dict[str, int] = {}
    fire_runs: dict[datetime, int] = {}
    for index in range(rng.randint(12, 30)):
        if rng.random() < 0.5:
            key = f"key-{index}"
            key_runs[key] = (await runs.submit(pool, job, idempotency_key=key)).run_id
        else:
            fire = first_fire + timedelta(minutes=index)
            submitted = await runs.submit(pool, job, schedule_id=schedule, fire_time=fire)
            fire_runs[fire] = submitted.run_id
    key_age = {key: rng.choice(RECENT + OLD) for key in key_runs}
    fire_age = {fire: rng.choice(RECENT + OLD) for fire in fire_runs}
    archived = {run for run in [*key_runs.values(), *fire_runs.values()] if rng.random() < 0.6}
    await _finish_and_archive(pool, archived)
    _age(store_dsn, "idempotency_keys", "key", key_age)
    _age(store_dsn, "schedule_fires", "fire_time", fire_age)

    def goes(run: int, ago: timedelta) -> bool:
        return ago > RETENTION and run in archived

    kept_keys = {k for k, run in key_runs.items() if not goes(run, key_age[k])}
    kept_fires = {f for f, run in fire_runs.items() if not goes(run, fire_age[f])}
    batch, batches = rng.randint(1, 4), rng.randint(1, 3)
    settings = maintainer.MaintainerSettings(
        key_retention=RETENTION, key_batch=batch, max_batches_per_pass=batches
    )
    clock = clocks.ManualClock(datetime.now(UTC))
    keeper = maintainer.Maintainer(pool, holder=HOLDER, clock=clock, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=300)
    before = (_counter("idempotency_key"), _counter("schedule_fire"))

    expired_keys = expired_fires = 0
    for _ in range(len(key_runs) + len(fire_runs) + 2):
        report = await keeper.step()
        assert report.leading and "keys" in report.ran
        assert report.idempotency_keys_expired <= batch * batches  # bounded per pass
        assert report.fire_keys_expired <= batch * batches
        expired_keys += report.idempotency_keys_expired
        expired_fires += report.fire_keys_expired
        if report.idempotency_keys_expired == report.fire_keys_expired == 0:
            break
        clock.advance(settings.key_interval)  # due again (at once only if it used every batch)

    assert _keys(store_dsn) == kept_keys
    assert _fires(store_dsn) == kept_fires
    assert expired_keys == len(key_runs) - len(kept_keys)
    assert expired_fires == len(fire_runs) - len(kept_fires)
    assert (_counter("idempotency_key"), _counter("schedule_fire")) == (
        before[0] + expired_keys,
        before[1] + expired_fires,
    )

    # A repeat of a kept submission finds its run; a repeat after its key went makes a new one.
    for key, run in key_runs.items():
        again = await runs.submit(pool, job, idempotency_key=key)
        assert (again.run_id == run, again.created) == (
            (True, False) if key in kept_keys else (False, True)
        ), key
    for fire, run in fire_runs.items():
        again = await runs.submit(pool, job, schedule_id=schedule, fire_time=fire)
        assert (again.run_id == run, again.created) == (
            (True, False) if fire in kept_fires else (False, True)
        ), fire


async def test_no_key_retention_keeps_every_key(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    run = (await runs.submit(pool, job, idempotency_key="forever")).run_id
    await _finish_and_archive(pool, {run})
    _age(store_dsn, "idempotency_keys", "key", {"forever": timedelta(days=400)})
    settings = maintainer.MaintainerSettings(key_retention=None)
    keeper = maintainer.Maintainer(pool, holder=HOLDER, settings=settings)
    assert await leases.acquire(pool, trigger.LEASE_NAME, HOLDER, ttl_seconds=300)
    report = await keeper.step()
    assert "keys" in report.ran and report.idempotency_keys_expired == 0
    assert _keys(store_dsn) == {"forever"}


def test_a_key_retention_must_be_positive() -> None:
    with pytest.raises(ValueError, match="key_retention must be positive"):
        maintainer.MaintainerSettings(key_retention=timedelta(0))
