"""runs.submit_many against runs.submit: the same runs, the same dedupe, the same refusals.

The oracle is ``submit`` itself: random batches of keyed and unkeyed items (keys repeated in the
batch, keys used before with the same or other args) go once through ``submit_many`` and once,
item by item, through ``submit`` under another key prefix; created flags, states, which items
share a run, and whether the batch is refused must agree. A refused batch writes nothing.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from sundial.api import validate
from sundial.attempt import finishes
from sundial.store import claims, errors, maintenance, runs
from sundial.store import pool as store_pool

KEYS = [f"k{i}" for i in range(5)]


def run_rows(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT id, idempotency_key, args, state, priority FROM job_runs ORDER BY id"
        ).fetchall()


def stored_run(dsn: str, run_id: int) -> dict[str, Any]:
    """A run's row, less what differs between any two submissions (id, key, times)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT to_jsonb(r) - %s::text[] FROM job_runs r WHERE id = %s",
            (["id", "idempotency_key", "run_at", "dispatch_key", "created_at"], run_id),
        ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def key_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM idempotency_keys").fetchone()
    assert row is not None
    return int(row[0])


async def one_by_one(
    pool: store_pool.Pool, job: uuid.UUID, items: list[runs.BatchItem]
) -> list[runs.Submitted] | type[Exception]:
    """What submit does with the items in order; the error class if one is refused."""
    results = []
    for item in items:
        try:
            results.append(
                await runs.submit(
                    pool,
                    job,
                    args=item.args,
                    priority=item.priority,
                    run_at=item.run_at,
                    delay_seconds=item.delay_seconds,
                    idempotency_key=item.idempotency_key,
                )
            )
        except errors.InvalidSubmissionError as error:
            return type(error)
    return results


def shape(results: list[runs.Submitted], known: dict[int, str]) -> list[tuple[Any, ...]]:
    """Results with run ids replaced by a name: the pre-existing run's, or first appearance."""
    names = dict(known)
    out = []
    for result in results:
        name = names.setdefault(result.run_id, f"new{len(names)}")
        out.append((name, result.created, result.state))
    return out


async def test_random_batches_agree_with_submit_one_by_one(
    pool: store_pool.Pool, store_dsn: str, make_job: Callable[..., uuid.UUID]
) -> None:
    # No column at its table default, so a column submit_many forgot to copy shows.
    job = make_job(
        "batch", queue="q2", priority=3, timeout_seconds=45, max_retries=4,
        backoff_base_seconds=1.5, backoff_cap_seconds=9.0, oom_max_retries=7, max_lost_leases=5,
    )  # fmt: skip
    rng = random.Random(16)
    refused = agreed = 0
    for trial in range(40):
        prefixes = (f"batch{trial}-", f"single{trial}-")
        known: list[dict[int, str]] = [{}, {}]
        for key in rng.sample(KEYS, rng.randint(0, 3)):
            args = {"v": rng.randint(1, 2)}
            for side, prefix in enumerate(prefixes):
                before = await runs.submit(pool, job, args=args, idempotency_key=prefix + key)
                known[side][before.run_id] = f"pre-{key}"
        picks = [
            (rng.choice([None, *KEYS]), {"v": rng.randint(1, 2)}, rng.choice([None, 0, 5]))
            for _ in range(rng.randint(1, 8))
        ]

        def items(prefix: str, picks: list[Any] = picks) -> list[runs.BatchItem]:
            return [
                runs.BatchItem(
                    args=args,
                    priority=priority,
                    idempotency_key=None if key is None else prefix + key,
                )
                for key, args, priority in picks
            ]

        expected = await one_by_one(pool, job, items(prefixes[1]))
        rows_before = run_rows(store_dsn)
        keys_before = key_rows(store_dsn)
        if isinstance(expected, type):
            with pytest.raises(expected):
                await runs.submit_many(pool, job, items(prefixes[0]))
            assert run_rows(store_dsn) == rows_before and key_rows(store_dsn) == keys_before
            refused += 1
            continue
        got = await runs.submit_many(pool, job, items(prefixes[0]))
        assert shape(got, known[0]) == shape(expected, known[1]), picks
        # Every column a new run takes from its job or its request is the same as submit's,
        # including columns added later (the comparison is of whole rows).
        for mine, theirs in zip(got, expected, strict=True):
            if mine.created:
                assert stored_run(store_dsn, mine.run_id) == stored_run(store_dsn, theirs.run_id)
        for result, (_, args, priority) in zip(got, picks, strict=True):
            info = await runs.get(pool, result.run_id)
            assert info is not None and info.job_id == job
            if result.created:
                assert info.args == args and info.priority == (3 if priority is None else priority)
        agreed += 1
    # Both branches of the oracle were exercised, not only the easy one.
    assert refused >= 5 and agreed >= 5, (refused, agreed)


async def test_ids_are_new_runs_in_the_order_given(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    got = await runs.submit_many(
        pool,
        job,
        [runs.BatchItem(args={"i": i}, run_at=later if i == 2 else None) for i in range(4)],
    )
    assert [r.created for r in got] == [True] * 4
    assert [r.state for r in got] == ["pending", "pending", "scheduled", "pending"]
    stored = {row[0]: row[2] for row in run_rows(store_dsn)}
    assert [stored[r.run_id] for r in got] == [{"i": i} for i in range(4)]
    claimed = await claims.claim(pool, "w", limit=10)
    due = sorted(r.run_id for r in got if r.state == "pending")
    assert sorted(run.id for run in claimed) == due


async def test_unknown_job_and_bad_items_write_nothing(
    pool: store_pool.Pool, store_dsn: str, job: uuid.UUID
) -> None:
    with pytest.raises(errors.UnknownJobError):
        await runs.submit_many(pool, uuid.uuid4(), [runs.BatchItem(idempotency_key="a")])
    with pytest.raises(errors.InvalidPriorityError):
        await runs.submit_many(pool, job, [runs.BatchItem(), runs.BatchItem(priority=10)])
    with pytest.raises(errors.ArgsTooLargeError):
        await runs.submit_many(
            pool, job, [runs.BatchItem(args={"x": "y" * (validate.MAX_ARGS_BYTES + 1)})]
        )
    with pytest.raises(errors.InvalidSubmissionError, match="timezone-aware"):
        await runs.submit_many(pool, job, [runs.BatchItem(run_at=datetime(2026, 1, 1))])
    assert run_rows(store_dsn) == [] and key_rows(store_dsn) == 0
    assert await runs.submit_many(pool, job, []) == []


async def test_a_key_of_an_archived_run_returns_that_run(
    pool: store_pool.Pool, job: uuid.UUID
) -> None:
    [first] = await runs.submit_many(pool, job, [runs.BatchItem(idempotency_key="old")])
    [run] = await claims.claim(pool, "w")
    await claims.finish(pool, "w", [finishes.succeeded(run)])
    assert await maintenance.archive_finished(pool, older_than_seconds=0) == 1
    [again, fresh] = await runs.submit_many(
        pool, job, [runs.BatchItem(idempotency_key="old"), runs.BatchItem(idempotency_key="new")]
    )
    assert (again.run_id, again.created, again.state) == (first.run_id, False, "completed")
    assert fresh.created and fresh.run_id != first.run_id


async def test_concurrent_batches_sharing_keys_make_one_run_per_key(
    store_dsn: str, job: uuid.UUID
) -> None:
    wide = await store_pool.open_pool(store_dsn, min_size=6, max_size=6)
    try:
        barrier = asyncio.Barrier(6)

        async def batch(seed: int) -> list[runs.Submitted]:
            keys = [f"shared-{i}" for i in range(50)]
            random.Random(seed).shuffle(keys)  # different orders: no deadlock either
            await barrier.wait()
            return await runs.submit_many(
                wide, job, [runs.BatchItem(args={"k": key}, idempotency_key=key) for key in keys]
            )

        results = await asyncio.gather(*(batch(seed) for seed in range(6)))
    finally:
        await wide.close()
    by_key: dict[int, set[int]] = {}
    created = 0
    for result in results:
        for submitted in result:
            by_key.setdefault(submitted.run_id, set()).add(1)
            created += submitted.created
    assert created == 50 and len(by_key) == 50
    assert len(run_rows(store_dsn)) == 50 and key_rows(store_dsn) == 50


@pytest.mark.parametrize("keyed", [False, True], ids=["without keys", "with keys"])
async def test_a_batch_runs_first_in_first_out_in_the_order_given(
    pool: store_pool.Pool, job: uuid.UUID, keyed: bool
) -> None:
    """Runs of one batch share their dispatch key, so their ids break the tie: the ids must
    grow in the order given, whatever order the statement joined the items in, or a batch
    would run backwards (identical items, or items whose keys sort the other way round)."""
    count = 40
    items = [
        runs.BatchItem(idempotency_key=f"fifo-{count - i:03d}" if keyed else None)
        for i in range(count)
    ]
    got = await runs.submit_many(pool, job, items)
    ids = [r.run_id for r in got]
    assert ids == sorted(ids), ids
    started = []
    while claimed := await claims.claim(pool, "w", limit=7):
        started += [run.id for run in sorted(claimed, key=lambda run: run.id)]
    assert started == ids
