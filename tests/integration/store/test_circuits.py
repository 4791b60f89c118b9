"""Runners' breaker states in PostgreSQL (store.circuits): written only while the runner is
announced, counted only while it is live, removed with its announcement."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable

import psycopg
import pytest

from sundial.store import circuits, runners, runs
from sundial.store import pool as store_pool

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def state(dependency: str, value: str, minutes: int = 0) -> circuits.CircuitState:
    return circuits.CircuitState(dependency, value, NOW + datetime.timedelta(minutes=minutes))


async def announce(pool: store_pool.Pool, worker: str, ttl_seconds: float = 60) -> None:
    await runners.announce(
        pool, worker, queues=["default"], handlers={"h": "async"}, ttl_seconds=ttl_seconds
    )


async def test_open_circuits_count_the_live_runners_that_see_them_open(
    pool: store_pool.Pool,
) -> None:
    for worker in ("r1", "r2", "r3"):
        await announce(pool, worker)
    await circuits.publish(pool, "r1", [state("payments", "open", 1), state("ledger", "closed")])
    await circuits.publish(pool, "r2", [state("payments", "half_open", 2)])
    await circuits.publish(pool, "r3", [state("payments", "closed"), state("mail", "closed")])

    found = await circuits.open_for(pool)

    assert found == {
        "payments": circuits.OpenCircuit(
            dependency="payments",
            open=1,
            half_open=1,
            runners=3,
            since=NOW + datetime.timedelta(minutes=1),
            workers=("r1", "r2"),
        )
    }
    assert found["payments"].summary() == "open on 2 of 3 live runners"
    assert await circuits.open_for(pool, ["ledger", "mail"]) == {}
    assert set(await circuits.open_for(pool, ["payments"])) == {"payments"}


async def test_a_transition_replaces_the_runners_row(pool: store_pool.Pool) -> None:
    await announce(pool, "r1")
    await circuits.publish(pool, "r1", [state("payments", "open")])
    assert set(await circuits.open_for(pool)) == {"payments"}

    written = await circuits.publish(pool, "r1", [state("payments", "closed", 5)])

    assert written == {"payments"}
    assert await circuits.open_for(pool) == {}


async def test_nothing_is_written_for_a_runner_that_is_not_announced(
    pool: store_pool.Pool,
) -> None:
    assert await circuits.publish(pool, "ghost", [state("payments", "open")]) == set()
    assert await circuits.open_for(pool) == {}


async def test_a_dead_runner_stops_counting_and_a_withdrawn_one_takes_its_rows(
    pool: store_pool.Pool, store_dsn: str
) -> None:
    await announce(pool, "dead")
    await announce(pool, "leaving")
    await circuits.publish(pool, "dead", [state("payments", "open")])
    await circuits.publish(pool, "leaving", [state("ledger", "open")])
    with psycopg.connect(store_dsn) as conn:
        conn.execute(
            "UPDATE runners SET expires_at = now() - interval '1 second' WHERE worker_id = 'dead'"
        )

    assert set(await circuits.open_for(pool)) == {"ledger"}  # the dead runner's is ignored

    await runners.withdraw(pool, "leaving")
    with psycopg.connect(store_dsn) as conn:
        rows = conn.execute("SELECT worker_id FROM circuits ORDER BY worker_id").fetchall()
    assert rows == [("dead",)]  # removed with its announcement; the dead one's row ages out
    assert await circuits.open_for(pool) == {}


async def test_jobs_find_the_open_circuit_of_their_dependency(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    calls = make_job("calls", dependency="payments")
    closed = make_job("closed", dependency="ledger")
    plain = make_job("plain")
    await announce(pool, "r1")
    await circuits.publish(pool, "r1", [state("payments", "open"), state("ledger", "closed")])

    found = await circuits.open_for_jobs(pool, [calls, closed, plain])

    assert list(found) == [calls]
    assert found[calls].dependency == "payments" and found[calls].workers == ("r1",)
    assert await circuits.open_for_jobs(pool, []) == {}


async def test_unfinished_runs_find_the_open_circuit_they_wait_on(
    pool: store_pool.Pool, make_job: Callable[..., uuid.UUID]
) -> None:
    calls = make_job("calls", dependency="payments")
    plain = make_job("plain")
    waiting = (await runs.submit(pool, calls)).run_id
    finished = (await runs.submit(pool, calls)).run_id
    other = (await runs.submit(pool, plain)).run_id
    await runs.cancel(pool, finished, reason="test")
    await announce(pool, "r1")
    await circuits.publish(pool, "r1", [state("payments", "open")])

    found = await circuits.open_for_runs(pool, [waiting, finished, other])

    assert list(found) == [waiting]
    assert found[waiting].summary() == "open on 1 of 1 live runner"
    assert await circuits.open_for_runs(pool, []) == {}


async def test_a_state_outside_the_breakers_is_refused_with_the_states_named(
    pool: store_pool.Pool,
) -> None:
    with pytest.raises(ValueError, match="'tripped' of dependency 'payments' is not one of"):
        await circuits.publish(pool, "r1", [state("payments", "tripped")])
