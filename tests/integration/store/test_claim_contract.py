"""The claim's contract, run against both claims: PostgreSQL's (``claims.claim``) and the hot
queue's on a real Redis, fed as a deployment feeds it (the runs submitted to PostgreSQL, the
outbox relayed before each claim).

Order: within a namespace a higher priority comes first, a run waiting long enough ages past
a newer one of higher priority, equals come first in, first out (a batch too), and a run is
not claimed before it is due, and a run given back without a delay (a runner shutting down)
takes its place again. Fair share between namespaces: a claim deals its slots
round-robin over the namespaces that have due runs, and a namespace flooding at the top
priority cannot hold another's runs back."""

from __future__ import annotations

import datetime
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple, Protocol

import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis
from sundial.store import claims, queries, releases, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import HotQueue, outbox


class Claimed(NamedTuple):
    id: int
    namespace: str | None


class Claim(Protocol):
    def __call__(self, **arguments: Any) -> Awaitable[list[Claimed]]: ...

    #: Give these claimed runs back unfinished, due again at once (``Dispatch.release``).
    give_back: Callable[[list[int]], Awaitable[None]]


@pytest.fixture(params=["postgresql", "redis"])
async def claim(
    request: pytest.FixtureRequest,
    pool: store_pool.Pool,
    store_dsn: str,
    redis_server: ThrowawayRedis,
) -> AsyncIterator[Claim]:
    """``claim(limit=..., namespaces=..., ...)`` on the claim this test is run against."""
    if request.param == "postgresql":
        attempts: dict[int, int] = {}

        async def on_postgresql(**arguments: Any) -> list[Claimed]:
            got = await claims.claim(pool, "w", **arguments)
            attempts.update((r.id, r.attempt) for r in got)
            return [Claimed(r.id, r.namespace) for r in got]

        async def give_back_on_postgresql(ids: list[int]) -> None:
            given = [releases.Release(i, attempts[i]) for i in ids]
            assert set((await releases.release(pool, "w", given)).states) == set(ids)

        on_postgresql.give_back = give_back_on_postgresql  # type: ignore[attr-defined]
        yield on_postgresql  # type: ignore[misc]
        return
    client = aioredis.Redis.from_url(redis_server.url)
    await client.flushall()
    outbox.switch(store_dsn, on=True)
    relay, queue = outbox.Relay(pool, client), HotQueue(client, "default")
    epoch = await queue.set_epoch(1)
    handed: dict[int, Any] = {}

    async def on_redis(**arguments: Any) -> list[Claimed]:
        while (await relay.once()).runs:
            pass
        got = await queue.claim(
            epoch, lease_ms=30_000, handlers=[("work.do", ""), ("work.do", "async")], **arguments
        )
        handed.update((c.id, c) for c in got)
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT id, namespace FROM job_runs WHERE id = ANY(%s)", ([c.id for c in got],)
            )
            namespaces = dict(await cursor.fetchall())
        return [Claimed(c.id, namespaces[c.id]) for c in got]

    async def give_back_on_redis(ids: list[int]) -> None:
        assert await queue.requeue([(handed[i], 0) for i in ids]) == [True] * len(ids)

    on_redis.give_back = give_back_on_redis  # type: ignore[attr-defined]
    try:
        yield on_redis  # type: ignore[misc]
    finally:
        await client.aclose()


async def _flood(
    pool: store_pool.Pool,
    make_job: Callable[..., uuid.UUID],
    namespace: str,
    count: int,
    priority: int,
) -> list[int]:
    job = make_job(f"job-{uuid.uuid4().hex[:8]}", namespace=namespace, handler="work.do")
    items = [runs.BatchItem(args={"n": n}, priority=priority) for n in range(count)]
    return [made.run_id for made in await runs.submit_many(pool, job, items)]


async def _one_at_a_time(claim: Claim, count: int) -> list[int]:
    order = []
    for _ in range(count):
        got = await claim(limit=1)
        order += [c.id for c in got]
    return order


async def test_priority_first_and_a_long_wait_ages_past_a_higher_priority(
    claim: Claim, pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("ordered", namespace="team-a", handler="work.do")
    now = datetime.datetime.now(datetime.UTC)
    # A priority step is worth a minute of waiting: 10 minutes at 0 beats 9 at once.
    old = await runs.submit(pool, job, priority=0, run_at=now - datetime.timedelta(minutes=10))
    high = await runs.submit(pool, job, priority=9)
    middle = await runs.submit(pool, job, priority=5)
    low = await runs.submit(pool, job, priority=1)
    expected = [old.run_id, high.run_id, middle.run_id, low.run_id]
    assert await _one_at_a_time(claim, 4) == expected


async def test_equals_come_first_in_first_out_even_in_one_batch(
    claim: Claim, pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """One batch is one transaction: one run_at, one dispatch key for all 25 (ids 1 to 25,
    past 9 and 19, where the ids' text sorts apart from their numbers)."""
    job = make_job("batched", namespace="team-a", handler="work.do")
    made = await runs.submit_many(pool, job, [runs.BatchItem(args={"n": n}) for n in range(25)])
    ids = sorted(m.run_id for m in made)
    assert await _one_at_a_time(claim, 25) == ids
    assert await claim(limit=5) == []


async def test_a_run_given_back_takes_its_place_again(
    claim: Claim, pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """A runner shutting down gives its runs back: they are claimed next again, ahead of the
    runs that were behind them, not sent to the back of the queue."""
    job = make_job("given", namespace="team-a", handler="work.do")
    now = datetime.datetime.now(datetime.UTC)
    aged = await runs.submit(pool, job, priority=0, run_at=now - datetime.timedelta(minutes=10))
    urgent = await runs.submit(pool, job, priority=9)
    behind = [(await runs.submit(pool, job, priority=p)).run_id for p in (5, 1, 0)]
    first = await claim(limit=2)
    assert [c.id for c in first] == [aged.run_id, urgent.run_id]
    await claim.give_back([urgent.run_id, aged.run_id])
    assert await _one_at_a_time(claim, 5) == [aged.run_id, urgent.run_id, *behind]


async def test_a_delayed_run_is_not_claimed_before_it_is_due(
    claim: Claim, pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    job = make_job("delayed", namespace="team-a", handler="work.do")
    later = await runs.submit(pool, job, delay_seconds=3600)
    now = await runs.submit(pool, job)
    assert [c.id for c in await claim(limit=10)] == [now.run_id]
    assert later.run_id != now.run_id


async def test_a_flood_at_top_priority_leaves_another_namespace_its_share(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    await _flood(pool, make_job, "team-b", 500, priority=9)
    quiet = await _flood(pool, make_job, "team-a", 5, priority=1)

    claimed = await claim(limit=10)
    by_namespace = Counter(run.namespace for run in claimed)
    # team-a has 5, fewer than its share (5 of 10): all of them; team-b fills the rest.
    assert by_namespace == {"team-a": 5, "team-b": 5}
    assert sorted(run.id for run in claimed if run.namespace == "team-a") == quiet


async def test_an_excluded_namespace_is_claimed_neither_by_its_share_nor_by_the_rest(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    """The pod launcher at a namespace's Pod limit leaves it out: the others' runs fill every
    slot, in any mode of serving (every namespace, or a list naming the excluded one)."""
    await _flood(pool, make_job, "team-b", 50, priority=9)
    quiet = await _flood(pool, make_job, "team-a", 3, priority=1)
    for namespaces in (None, ["team-a", "team-b"]):
        claimed = await claim(limit=10, namespaces=namespaces, excluded_namespaces=["team-b"])
        assert sorted(run.id for run in claimed) == (quiet if namespaces is None else [])
    claimed = await claim(limit=10, excluded_namespaces=["team-a"])
    assert len(claimed) == 10 and {run.namespace for run in claimed} == {"team-b"}


async def test_slots_a_namespace_cannot_fill_go_to_the_others_in_priority_order(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    low = await _flood(pool, make_job, "team-b", 20, priority=1)
    high = await _flood(pool, make_job, "team-b", 20, priority=5)
    await _flood(pool, make_job, "team-a", 2, priority=1)

    claimed = await claim(limit=12)
    assert len(claimed) == 12
    team_b = [run.id for run in claimed if run.namespace == "team-b"]
    # Within team-b, aged priority still orders: its 10 are the priority-5 runs, oldest first.
    assert team_b == high[:10] and not set(team_b) & set(low)


async def test_one_slot_at_a_time_still_reaches_the_quiet_namespace(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    """A busy runner frees one slot at a time: each claim of one run goes to one of the
    namespaces with work at random, so team-a's first run is not behind all of team-b's
    (the chance that 30 claims all went to team-b is 2**-30)."""
    await _flood(pool, make_job, "team-b", 200, priority=9)
    await _flood(pool, make_job, "team-a", 50, priority=1)

    seen: list[str | None] = []
    for _ in range(30):
        [run] = await claim(limit=1)
        seen.append(run.namespace)
        if run.namespace == "team-a":
            break
    assert seen[-1] == "team-a", seen


async def test_a_reserved_slot_is_kept_from_the_namespace_the_claimer_runs_most_of(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    """A runner of 64 slots busy with team-b's flood keeps its last slot from team-b: a
    namespace behind it (holding, with the run, no more than team-b for its weight) takes it at
    once; team-b alone never does."""
    await _flood(pool, make_job, "team-b", 500, priority=9)
    claimed = await claim(limit=10, held={"team-b": 54}, reserved=1)
    assert Counter(run.namespace for run in claimed) == {"team-b": 9}
    assert await claim(limit=1, held={"team-b": 63}, reserved=1) == []

    quiet = await _flood(pool, make_job, "team-a", 4, priority=1)
    claimed = await claim(limit=1, held={"team-b": 63}, reserved=1)
    assert [run.id for run in claimed] == quiet[:1]
    # team-a holds one and stays behind team-b with its second.
    claimed = await claim(limit=1, held={"team-b": 63, "team-a": 1}, reserved=1)
    assert [run.id for run in claimed] == quiet[1:2]
    # Weighed: team-a of weight 0.1 holding 10 is the one held most (100 against 63), so
    # team-b is behind it and takes the slot.
    held = {"team-b": 63, "team-a": 10}
    weighed = {"team-a": 0.1}
    claimed = await claim(limit=1, held=held, weights=weighed, reserved=1)
    assert [run.namespace for run in claimed] == ["team-b"]
    claimed = await claim(limit=1, held=held, reserved=1)
    assert [run.id for run in claimed] == quiet[2:3]
    # Without reserved slots every slot is anyone's: team-b takes the one team-a leaves.
    claimed = await claim(limit=2, held={"team-b": 62, "team-a": 11})
    assert Counter(run.namespace for run in claimed) == {"team-a": 1, "team-b": 1}


async def test_a_freed_slot_goes_to_the_namespace_the_claimer_runs_least_of(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    """A runner full of team-b's runs frees one slot at a time: each goes to team-a, which it
    runs nothing of, not to a draw, until team-a holds as many; from then on no namespace gets
    a second slot ahead of the other (held counts are the runs the claimer runs now)."""
    await _flood(pool, make_job, "team-b", 200, priority=9)
    await _flood(pool, make_job, "team-a", 50, priority=1)

    held = Counter({"team-b": 8})
    for turn in range(28):
        [run] = await claim(limit=1, held=held)
        assert run.namespace is not None
        if turn < 8:
            assert run.namespace == "team-a", (turn, held)
        held[run.namespace] += 1
        assert abs(held["team-a"] - held["team-b"]) <= 1 or turn < 8, (turn, held)
    assert held == {"team-a": 18, "team-b": 18}


async def test_more_namespaces_than_slots_gives_each_slot_to_a_different_namespace(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    for team in ("a", "b", "c", "d", "e"):
        await _flood(pool, make_job, f"team-{team}", 10, priority=1)

    claimed = await claim(limit=3)
    assert len({run.namespace for run in claimed}) == 3

    # Over many claims every namespace is served, none twice before all once per round.
    everything = Counter(run.namespace for run in claimed)
    for _ in range(9):
        everything.update(run.namespace for run in await claim(limit=5))
    assert sum(everything.values()) == 48
    assert set(everything.values()) <= {9, 10}, everything


async def test_a_runner_that_serves_some_namespaces_shares_its_slots_between_them(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    await _flood(pool, make_job, "team-a", 30, priority=9)
    await _flood(pool, make_job, "team-b", 30, priority=1)
    await _flood(pool, make_job, "team-c", 30, priority=9)

    claimed = await claim(namespaces=["team-a", "team-b"], limit=10)
    assert Counter(run.namespace for run in claimed) == {"team-a": 5, "team-b": 5}


async def test_weights_share_a_claims_slots_in_their_proportion(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    await _flood(pool, make_job, "team-a", 400, priority=1)
    await _flood(pool, make_job, "team-b", 400, priority=9)
    await _flood(pool, make_job, "team-c", 400, priority=9)

    weights = {"team-a": 3, "team-b": 1}  # team-c is not named: it weighs 1
    claimed = await claim(limit=10, weights=weights)
    assert Counter(run.namespace for run in claimed) == {"team-a": 6, "team-b": 2, "team-c": 2}

    # Over many claims of a few slots, the shares hold too, and nobody is left out: team-a
    # takes two of three slots about three claims in four (1.74 runs a claim; it needs over
    # 1.5, which it misses over 100 claims about once in 10**7).
    over_time: Counter[str | None] = Counter()
    for _ in range(100):
        over_time.update(run.namespace for run in await claim(limit=3, weights=weights))
    assert over_time["team-b"] > 0 and over_time["team-c"] > 0
    assert over_time["team-a"] > over_time["team-b"] + over_time["team-c"], over_time


async def test_one_slot_at_a_time_a_light_namespace_still_gets_its_turn(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID], claim: Claim
) -> None:
    """Weights tilt the single-slot draw; they never make it certain. Against weight 4,
    weight 1 wins a draw one time in eight (its rank is uniform on [0, 1), the other's on
    [0, 1/4)); the chance that it loses 120 draws in a row is about 10**-7."""
    await _flood(pool, make_job, "team-a", 150, priority=1)
    await _flood(pool, make_job, "team-b", 150, priority=1)

    seen: Counter[str | None] = Counter()
    for _ in range(120):
        [run] = await claim(limit=1, weights={"team-a": 4})
        seen[run.namespace] += 1
    assert seen["team-b"] > 0 and seen["team-a"] > seen["team-b"], seen


async def test_runs_of_no_namespace_are_still_claimed(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """A run an older version inserted carries no namespace: a runner of every namespace
    takes it with the slots the namespaces leave."""
    [legacy] = await _flood(pool, make_job, "team-old", 1, priority=1)
    async with pool.connection() as conn:
        await conn.execute("UPDATE job_runs SET namespace = NULL WHERE id = %s", (legacy,))
    await _flood(pool, make_job, "team-a", 3, priority=1)

    claimed = await claims.claim(pool, "w", limit=10)
    assert len(claimed) == 4 and legacy in {run.id for run in claimed}
    assert await claims.claim(pool, "w", namespaces=["team-a"], limit=10) == []


def _claim_params(**overrides: object) -> dict[str, object]:
    """The claim statement's parameters as `claims.claim` passes them, for EXPLAIN."""
    return {
        "worker": "w",
        "queues": ["default"],
        "handlers": None,
        "execution_models": None,
        "unset_model": True,
        "limit": 10,
        "lease_seconds": 30.0,
        "namespaces": None,
        "excluded": None,
        "floor_namespaces": None,
        "floor_keys": None,
        "weight_namespaces": None,
        "weights": None,
        "held_namespaces": None,
        "held": None,
        "reserved": 0,
        **overrides,
    }


async def _explain_claim(pool: store_pool.Pool, params: dict[str, object]) -> str:
    async with pool.connection() as conn:
        await conn.execute("ANALYZE job_runs")
        # EXPLAIN ANALYZE runs the claim: rolled back, so the runs stay pending.
        async with conn.transaction(force_rollback=True):
            await conn.execute(claims.INDEX_ORDER_ONLY)
            cursor = await conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " + queries.get("claim"),
                params,
            )
            return "\n".join(line for (line,) in await cursor.fetchall())


def _buffers(plan: str) -> int:
    """The shared buffers the whole statement touched (its top node's count)."""
    for line in plan.splitlines():
        if "Buffers:" in line:
            return sum(int(n) for n in re.findall(r"(?:hit|read)=(\d+)", line))
    raise AssertionError(f"no buffer counts in the plan:\n{plan}")


async def test_a_quiet_queue_is_claimed_without_reading_another_queues_backlog(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """A runner of one queue claims beside thousands of pending runs of another queue in the
    same namespace (a backlog it cannot take): the claim reads about as much as beside none.
    With one index range per namespace it stepped over every one of them, each claim."""
    quiet = make_job("quiet", namespace="team-a", handler="work.quiet", queue="quiet")
    await runs.submit(pool, quiet)
    alone = _buffers(await _explain_claim(pool, _claim_params(queues=["quiet"], limit=1)))
    assert len(await claims.claim(pool, "w", queues=["quiet"], limit=1)) == 1
    bulk = make_job("bulk", namespace="team-a", handler="work.bulk", queue="bulk")
    await runs.submit_many(pool, bulk, [runs.BatchItem(args={"n": n}) for n in range(3000)])
    await runs.submit(pool, quiet)
    plan = await _explain_claim(pool, _claim_params(queues=["quiet"], limit=1))
    assert _buffers(plan) <= alone + 20, plan
    # The quiet run is there to claim (EXPLAIN's claim was rolled back), the backlog too.
    claimed = await claims.claim(pool, "w", queues=["quiet"], limit=10)
    assert [run.queue for run in claimed] == ["quiet"]
    assert len(await claims.claim(pool, "w", queues=["bulk"], limit=5000)) == 3000


async def test_the_claim_plan_reads_each_namespace_from_its_own_index_range(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    """The plan that keeps a flood cheap for everyone: namespaces listed by backward probes of
    the pending index (its live end, not the dead entries claims leave at the front), each
    namespace's runs read from its own (namespace, queue) range of that index, never the
    global dispatch index walked past another namespace's flood or another queue's."""
    await _flood(pool, make_job, "team-b", 3000, priority=9)
    await _flood(pool, make_job, "team-a", 5, priority=1)
    # A runner full of team-b's runs.
    plan = await _explain_claim(pool, _claim_params(held_namespaces=["team-b"], held=[40]))
    assert "Index Only Scan Backward using job_runs_pending_by_queue_idx" in plan, plan
    assert "Index Scan using job_runs_pending_by_queue_idx" in plan, plan
    assert "job_runs_dispatch_idx" not in plan, plan
