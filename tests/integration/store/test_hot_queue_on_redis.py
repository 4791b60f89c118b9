"""The hot queue's Redis half against a real Redis: one claim per due run however many
claimers race, dispatch order and fair share, leases that expire and fence out the attempt
that lost them, and an epoch that a failover or a restart changes, so an attempt number
handed out twice never carries the same token twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import throwaway_redis
from sundial.store import migrate, pool
from sundial.store.hot_queue import Claim, DueRun, EpochChangedError, HotQueue, Token, overlay

HANDLERS = [("work", "async")]
LEASE_MS = 30_000


async def _queue(client: aioredis.Redis, epoch: int = 1) -> HotQueue:
    queue = HotQueue(client, "default")
    assert await queue.set_epoch(epoch) == epoch
    return queue


async def _eventually(
    read: Callable[[], Awaitable[Any]], holds: Callable[[Any], bool], within: float = 10.0
) -> None:
    for _ in range(int(within / 0.02)):
        if holds(await read()):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not within {within} s")


def _runs(ids: range, namespace: str = "team-a", handler: str = "work", due_ms: int = 0):
    return [DueRun(i, due_ms + i, namespace, handler, "async") for i in ids]


async def test_each_due_run_is_claimed_once_however_many_claimers_race(
    client: aioredis.Redis,
) -> None:
    queue = await _queue(client)
    await queue.enqueue(_runs(range(1, 601), "team-a") + _runs(range(601, 801), "team-b"))
    claimed: list[Claim] = []

    async def claimer() -> None:
        while batch := await queue.claim(1, lease_ms=LEASE_MS, limit=7, handlers=HANDLERS):
            claimed.extend(batch)

    await asyncio.gather(*(claimer() for _ in range(8)))
    assert sorted(c.id for c in claimed) == list(range(1, 801))
    assert {c.token for c in claimed} == {Token(1, 1)}


async def test_runs_come_in_dispatch_order_and_not_before_they_are_due(
    client: aioredis.Redis,
) -> None:
    queue = await _queue(client)
    far = 10**13  # the year 2286, in ms
    await queue.enqueue([DueRun(3, 300, "team-a", "work", "async"),
                         DueRun(1, 100, "team-a", "work", "async"),
                         DueRun(2, 200, "team-a", "work", "async"),
                         DueRun(4, far, "team-a", "work", "async")])  # fmt: skip
    first = await queue.claim(1, lease_ms=LEASE_MS, limit=2, handlers=HANDLERS)
    rest = await queue.claim(1, lease_ms=LEASE_MS, limit=10, handlers=HANDLERS)
    assert [c.id for c in first] == [1, 2] and [c.id for c in rest] == [3]


async def test_a_flooding_namespace_does_not_hold_another_back(client: aioredis.Redis) -> None:
    queue = await _queue(client)
    await queue.enqueue(_runs(range(1, 1001), "flood") + _runs(range(2001, 2004), "quiet"))
    batch = await queue.claim(1, lease_ms=LEASE_MS, limit=10, handlers=HANDLERS)
    by_namespace = Counter("quiet" if c.id > 2000 else "flood" for c in batch)
    assert by_namespace == {"quiet": 3, "flood": 7}, "slots the quiet one cannot fill go on"
    # Equal shares while both have runs: over claims of 4, two each.
    await queue.enqueue(_runs(range(3001, 3101), "quiet"))
    shares = Counter(
        "quiet" if c.id > 2000 else "flood"
        for c in await queue.claim(1, lease_ms=LEASE_MS, limit=4, handlers=HANDLERS)
    )
    assert shares == {"quiet": 2, "flood": 2}


async def test_a_claimer_takes_only_its_handlers_models_and_namespaces(
    client: aioredis.Redis,
) -> None:
    queue = await _queue(client)
    await queue.enqueue(
        _runs(range(1, 4), "team-a", handler="other")
        + _runs(range(11, 14), "team-a")
        + _runs(range(21, 24), "team-b")
    )
    mine = await queue.claim(
        1, lease_ms=LEASE_MS, limit=10, handlers=HANDLERS, namespaces=["team-a"]
    )
    assert sorted(c.id for c in mine) == [11, 12, 13]
    assert await queue.claim(1, lease_ms=LEASE_MS, limit=10, handlers=[("work", "thread")]) == []
    assert await queue.claim(1, lease_ms=LEASE_MS, limit=10, handlers=HANDLERS, namespaces=[]) == []
    others = await queue.claim(1, lease_ms=LEASE_MS, limit=10, handlers=[("other", "async")])
    assert sorted(c.id for c in others) == [1, 2, 3], "stepped over, not lost"


async def test_enqueue_is_idempotent_and_leaves_a_held_run_alone(client: aioredis.Redis) -> None:
    queue = await _queue(client)
    assert await queue.enqueue(_runs(range(1, 3))) == 2
    assert await queue.enqueue(_runs(range(1, 3))) == 0
    [held, _] = await queue.claim(1, lease_ms=LEASE_MS, limit=2, handlers=HANDLERS)
    assert await queue.enqueue(_runs(range(held.id, held.id + 1))) == 0, "a relay's repeat"
    assert await queue.claim(1, lease_ms=LEASE_MS, limit=2, handlers=HANDLERS) == []


async def test_an_expired_lease_fences_out_the_attempt_that_lost_it(
    client: aioredis.Redis,
) -> None:
    queue = await _queue(client)
    await queue.enqueue(_runs(range(1, 3)))
    first, kept = await queue.claim(1, lease_ms=200, limit=2, handlers=HANDLERS)
    assert await queue.heartbeat(60_000, [kept]) == [True]
    await asyncio.sleep(0.4)
    assert await queue.expire(100) == [(first.id, first.token)], "only the one not renewed"
    assert await queue.heartbeat(60_000, [first]) == [False], "it learns it lost its run"
    # Its retry is made due again (by PostgreSQL's retry policy, here directly) and claimed;
    # the record counted the lost attempt, and so does the delivery.
    lost = first.token.attempt
    await queue.enqueue([DueRun(first.id, first.id, "team-a", "work", "async", attempt=lost)])
    [retry] = await queue.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
    assert retry.id == first.id and retry.token == Token(1, 2) > first.token
    assert await queue.release([first, retry]) == [False, True], "the late one writes nothing"
    assert await queue.release([retry]) == [False], "a finish is released once"
    assert await queue.forget([retry.id, kept.id]) == 1, "a held run's count stays"


async def test_no_epoch_no_claim_and_the_first_epoch_set_stands(client: aioredis.Redis) -> None:
    queue = HotQueue(client, "default")
    await queue.enqueue(_runs(range(1, 2)))
    with pytest.raises(EpochChangedError, match="has none"):
        await queue.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
    assert await queue.set_epoch(7) == 7
    assert await queue.set_epoch(8) == 7, "another process's epoch for this server stands"
    with pytest.raises(EpochChangedError, match="has 7"):
        await queue.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
    [claim] = await queue.claim(7, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
    assert claim.token == Token(7, 1)


async def test_a_promoted_replica_hands_out_attempts_under_a_new_epoch_only() -> None:
    """The claim the old primary acknowledged never reached the replica (asynchronous
    replication): the promoted replica hands out the same attempt number again, and only the
    new epoch tells the two apart."""
    with throwaway_redis() as primary, throwaway_redis() as replica:
        old = aioredis.Redis.from_url(primary.url)
        new = aioredis.Redis.from_url(replica.url)
        try:
            # A primary's first replica gives it a new replication id, so the epoch is set
            # once the replica follows (set before, the claim below would ask for a new one).
            replica.replica_of(primary)
            await _eventually(
                lambda: new.info("replication"), lambda i: i["master_link_status"] == "up"
            )
            on_old = await _queue(old, epoch=1)
            await on_old.enqueue(_runs(range(1, 2)))
            await _eventually(lambda: new.get("{sundial:default}:epoch"), bool)
            replica.promote()  # the failover: the replica stops following ...
            [lost] = await on_old.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
            primary.kill()  # ... and the primary's last claim is gone with it
            on_new = HotQueue(new, "default")
            with pytest.raises(EpochChangedError):
                await on_new.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
            assert await on_new.set_epoch(2) == 2
            [again] = await on_new.claim(2, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
            assert again.id == lost.id and again.token.attempt == lost.token.attempt
            assert again.token > lost.token
        finally:
            await old.aclose()
            await new.aclose()


@pytest.mark.parametrize("persistence", ["aof", "none"])
async def test_a_restarted_server_needs_a_new_epoch(persistence: str) -> None:
    with throwaway_redis(persistence=persistence) as server:
        client = aioredis.Redis.from_url(server.url)
        try:
            queue = await _queue(client, epoch=1)
            await queue.enqueue(_runs(range(1, 2)))
            server.restart()
            await client.aclose()  # its connection died with the server
            client = aioredis.Redis.from_url(server.url)
            queue = HotQueue(client, "default")
            with pytest.raises(EpochChangedError):
                await queue.claim(1, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
            assert await queue.set_epoch(2) == 2
            found = await queue.claim(2, lease_ms=LEASE_MS, limit=1, handlers=HANDLERS)
            # With its append-only file the due run came back; without, the reconciler
            # (PostgreSQL holds the run) must enqueue it again.
            assert [c.id for c in found] == ([1] if persistence == "aof" else [])
        finally:
            await client.aclose()


async def test_epochs_come_from_postgresql_and_only_grow(
    client: aioredis.Redis, make_database: Callable[..., str]
) -> None:
    """Every process that meets a changed epoch may ask PostgreSQL for the next one at once:
    one is set, all of them claim under it, and each later one is larger."""
    dsn = make_database()
    migrate.migrate(dsn)
    store = await pool.open_pool(dsn, max_size=8)
    try:
        queue = HotQueue(client, "default")
        in_force = set(await asyncio.gather(*(queue.renew_epoch(store) for _ in range(8))))
        assert len(in_force) == 1
        [first] = in_force
        await client.delete("{sundial:default}:epoch")  # as a server that lost everything
        assert await queue.renew_epoch(store) > first
    finally:
        await store.close()


async def test_readers_see_a_queue_move_with_each_lease_begun_or_ended_and_only_then(
    client: aioredis.Redis,
) -> None:
    """``overlay.moves``: what the status mirror compares to skip a held run's ScheduledJob."""
    queue = await _queue(client)

    async def moves() -> tuple[str, ...] | None:
        return await overlay.moves(client, ["default"])

    seen = [await moves()]

    async def moved() -> bool:
        seen.append(await moves())
        return seen[-1] != seen[-2]

    await queue.enqueue(_runs(range(1, 4)))
    assert not await moved(), "a run made due shows as recorded: pending"
    first, second, third = await queue.claim(1, lease_ms=200, limit=3, handlers=HANDLERS)
    assert await moved(), "claimed"
    assert await queue.heartbeat(60_000, [second, third]) == [True, True]
    assert not await moved(), "a heartbeat shows nothing new"
    assert await queue.release([second]) == [True]
    assert await moved(), "finished"
    assert await queue.requeue([(third, 0)]) == [True]
    assert await moved(), "given back"
    await asyncio.sleep(0.4)
    assert [run_id for run_id, _ in await queue.expire(100)] == [first.id]
    assert await moved(), "taken back"
    assert await queue.release([first]) == [False]
    assert not await moved(), "a stale finish changes nothing"
    assert all(text is not None and text[0].startswith("default=") for text in seen)


async def test_a_restarted_server_is_a_move_and_no_answer_is_none() -> None:
    with throwaway_redis(persistence="aof") as server:
        client = aioredis.Redis.from_url(server.url)
        try:
            before = await overlay.moves(client, ["default"])
            server.restart()  # its leases came back from the file, its identity did not
            await client.aclose()
            client = aioredis.Redis.from_url(server.url)
            after = await overlay.moves(client, ["default"])
            assert after is not None and after != before
            unanswered = overlay.unanswered()
            server.stop()
            assert await overlay.moves(client, ["default"]) is None
            assert overlay.unanswered() == unanswered + 1
        finally:
            await client.aclose()
