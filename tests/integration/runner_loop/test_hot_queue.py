"""Runners on the Redis hot queue: what a user of PostgreSQL alone sees, the same.

Real `sundial runner` processes with ``--hot-queue-url``, a real Redis and a real PostgreSQL
whose hot queue is on (``sundial migrate --hot-queue on``): every run completes exactly once,
a killed runner's run is finished by another under a later attempt, a runner paused past its
lease cannot overwrite the attempt after it, a cancelled run stops, a shutdown gives its runs
back, and a runner whose setting disagrees with the database does not start.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import psycopg
import pytest
import redis
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.runner import hot_queue
from sundial.store import pool as store_pool
from sundial.store import runs
from sundial.store.hot_queue import member, outbox
from support.runner_loop import Runners, create_job, eventually, run_row, states, submit

SHORT_LEASE = ("--lease-seconds", "2", "--maintenance-seconds", "0.2")


@pytest.fixture
def redis_url(redis_server: ThrowawayRedis) -> Iterator[str]:
    with redis.Redis.from_url(redis_server.url) as connection:
        connection.flushall()
    yield redis_server.url


@pytest.fixture
def hot(dsn: str) -> str:
    """This test's database with the hot queue on."""
    outbox.switch(dsn, on=True)
    return dsn


def _leased(url: str, run_id: int) -> bool:
    with redis.Redis.from_url(url) as connection:
        return connection.zscore("{sundial:default}:leases", member(run_id)) is not None


def _listed(dsn: str, run_id: int, *options: str) -> tuple[str, int] | None:
    """The state and attempt `sundial runs -o json` lists ``run_id`` with (None: not listed)."""
    env = {k: v for k, v in os.environ.items() if k != "SUNDIAL_HOT_QUEUE_URL"}
    listed = subprocess.run(
        [sys.executable, "-m", "sundial", "runs", "--dsn", dsn, "-o", "json", *options],
        capture_output=True, text=True, timeout=60, check=True, env=env,
    )  # fmt: skip
    for line in listed.stdout.splitlines():
        item = json.loads(line)
        if item["runId"] == str(run_id):
            return item["state"], item["attempt"]
    return None


def ledger_lines(ledger: pathlib.Path) -> list[str]:
    return ledger.read_text().splitlines()


def _column(dsn: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchall()


def test_every_run_completes_exactly_once_through_the_hot_queue(
    hot: str, redis_url: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    ledger = tmp_path / "ledger"
    job = create_job(hot, "loop.record_token")
    foreign = create_job(hot, "someone.elses.handler")
    early = submit(hot, job, 500, {"path": str(ledger)})
    (foreign_run,) = submit(hot, foreign)
    runner = runners.start(hot, "--concurrency", "async=200", "--hot-queue-url", redis_url)
    late = submit(hot, job, 1500, {"path": str(ledger)})

    eventually(lambda: states(hot).get("completed") == 2000, what="2000 completed")

    executions = collections.Counter(
        int(line.split()[0]) for line in ledger.read_text().splitlines()
    )
    assert sorted(executions) == sorted(early + late)
    assert set(executions.values()) == {1}
    assert states(hot) == {"completed": 2000, "pending": 1}
    # Each under its token from Redis: attempt 1 of an epoch PostgreSQL issued.
    tokens = _column(
        hot,
        "SELECT attempt, hot_epoch IS NOT NULL, started_at IS NOT NULL, count(*)"
        " FROM job_runs WHERE state = 'completed' GROUP BY 1, 2, 3",
    )
    assert tokens == [(1, True, True, 2000)]
    # The handler's fencing token is the row's (epoch << 32) | attempt.
    seen = {int(run): int(token) for run, _attempt, token in map(str.split, ledger_lines(ledger))}
    recorded = dict(
        _column(hot, "SELECT id, (hot_epoch << 32) | attempt FROM job_runs WHERE hot_epoch > 0")
    )
    assert seen == recorded and min(seen.values()) > 1 << 32
    unclaimed = run_row(hot, foreign_run)
    assert (unclaimed["state"], unclaimed["attempt"]) == ("pending", 0)
    succeeded = runner.metric(
        "sundial_runs_total", handler="loop.record_token", outcome="succeeded"
    )
    assert succeeded == 2000
    assert runner.terminate_and_wait() == 0
    with redis.Redis.from_url(redis_url) as connection:
        assert connection.zcard("{sundial:default}:leases") == 0
        assert connection.hlen("{sundial:default}:started") == 0  # ended with each lease


def test_a_killed_runner_s_run_is_finished_by_another_under_a_later_attempt(
    hot: str, redis_url: str, runners: Runners
) -> None:
    job = create_job(hot, "loop.sleep")
    (run_id,) = submit(hot, job, args={"seconds": 1.5})
    first = runners.start(hot, *SHORT_LEASE, "--hot-queue-url", redis_url, worker_id="doomed")
    eventually(lambda: _leased(redis_url, run_id), what="the first runner to claim the run")

    first.process.kill()
    first.process.wait(10)
    runners.start(hot, *SHORT_LEASE, "--hot-queue-url", redis_url, worker_id="rescuer")

    eventually(lambda: run_row(hot, run_id)["state"] == "completed", what="the run to complete")
    run = run_row(hot, run_id)
    assert run["attempt"] == 2
    assert run["lease_owner"] == "rescuer"
    assert run["lease_expiries"] == 1


def test_a_runner_paused_past_its_lease_cannot_overwrite_the_attempt_after_it(
    hot: str, redis_url: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    ledger = tmp_path / "ledger"
    job = create_job(hot, "loop.record_after")
    (run_id,) = submit(hot, job, args={"seconds": 1.0, "path": str(ledger)})
    paused = runners.start(hot, *SHORT_LEASE, "--hot-queue-url", redis_url, worker_id="paused")
    eventually(lambda: _leased(redis_url, run_id), what="the paused runner to claim the run")
    paused.signal(signal.SIGSTOP)
    rescuer = runners.start(hot, *SHORT_LEASE, "--hot-queue-url", redis_url, worker_id="rescuer")
    eventually(lambda: run_row(hot, run_id)["state"] == "completed", what="the run to complete")
    paused.signal(signal.SIGCONT)
    # Resumed, the paused runner's attempt 1 either ends first and its write is refused, or
    # its heartbeat (overdue at once) finds the lease gone first and cancels it before its
    # handler wakes (a CI run under load saw that order): either way it is told it lost.
    eventually(lambda: paused.logged("lease lost"), what="the paused runner to learn it lost")
    attempts = [line.split()[1] for line in ledger_lines(ledger)]
    assert attempts[0] == "2" and attempts.count("2") == 1 and set(attempts) <= {"1", "2"}
    run = run_row(hot, run_id)
    assert (run["state"], run["attempt"], run["lease_owner"]) == ("completed", 2, "rescuer")
    assert rescuer.metric("sundial_runs_total", handler="loop.record_after", outcome="succeeded")


def test_a_cancelled_run_stops_and_stays_cancelled(
    hot: str, redis_url: str, runners: Runners
) -> None:
    job = create_job(hot, "loop.sleep")
    (run_id,) = submit(hot, job, args={"seconds": 600})
    runner = runners.start(hot, "--lease-seconds", "3", "--hot-queue-url", redis_url)
    eventually(lambda: _leased(redis_url, run_id), what="the run to be claimed")
    # `sundial runs` given the Redis shows it running under Redis's attempt; the record alone,
    # pending (the hot claim writes nothing to PostgreSQL).
    assert _listed(hot, run_id, "--hot-queue-url", redis_url) == ("running", 1)
    assert _listed(hot, run_id) == ("pending", 0)
    assert _listed(hot, run_id, "--hot-queue-url", redis_url, "--state", "running") == (
        "running",
        1,
    )

    async def cancel() -> None:
        pool = await store_pool.open_pool(hot, min_size=1, max_size=1)
        try:
            await runs.cancel(pool, run_id, reason="no longer wanted")
        finally:
            await pool.close()

    asyncio.run(cancel())
    # A heartbeat (every second with a 3 s lease) finds the run cancelled; the attempt stops
    # and its slot is freed, its lease in Redis ended.
    eventually(lambda: not _leased(redis_url, run_id), within=30, what="the attempt to stop")
    run = run_row(hot, run_id)
    assert run["state"] == "cancelled"
    assert runner.logged("cancellation requested")


def test_a_runner_shutting_down_gives_its_runs_back_to_the_next(
    hot: str, redis_url: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    ledger = tmp_path / "ledger"
    job = create_job(hot, "loop.record_after")
    run_ids = submit(hot, job, 3, {"seconds": 30, "path": str(ledger)})
    leaving = runners.start(
        hot, "--grace-seconds", "1", "--hot-queue-url", redis_url, worker_id="leaving"
    )
    eventually(
        lambda: all(_leased(redis_url, run_id) for run_id in run_ids), what="all three claimed"
    )
    assert leaving.terminate_and_wait() == 0
    assert not any(_leased(redis_url, run_id) for run_id in run_ids)
    with psycopg.connect(hot) as conn:  # the next attempts are quick
        conn.execute("UPDATE job_runs SET args = %s::jsonb", (f'{{"path": "{ledger}"}}',))
    runners.start(hot, "--hot-queue-url", redis_url, worker_id="next")
    eventually(lambda: states(hot).get("completed") == 3, within=60, what="the three to complete")
    assert {row[0] for row in _column(hot, "SELECT attempt FROM job_runs")} == {2}


_STARTED = {
    "runner": ["runner", "--handlers", "handlers.loop_jobs", "--metrics-port", "-1"],
    "scheduler": ["scheduler", "--once", "--metrics-port", "-1"],
}


@pytest.mark.parametrize("component", sorted(_STARTED))
@pytest.mark.parametrize("mode", ["on without a url", "off with a url"])
def test_a_process_whose_setting_disagrees_with_the_database_does_not_start(
    dsn: str, redis_url: str, mode: str, component: str
) -> None:
    if mode == "on without a url":
        switched = subprocess.run(
            [sys.executable, "-m", "sundial", "migrate", "--dsn", dsn, "--hot-queue", "on"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert switched.returncode == 0, switched
        assert switched.stdout.splitlines()[-1] == "hot queue is on", switched.stdout
        extra: list[str] = []
        expected = f"give the {component} its Redis with --hot-queue-url"
    else:
        extra = ["--hot-queue-url", redis_url]
        expected = "turn it on with `sundial migrate --hot-queue on`"
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parents[2])}
    env.pop("SUNDIAL_HOT_QUEUE_URL", None)
    command, *options = _STARTED[component]
    done = subprocess.run(
        [sys.executable, "-m", "sundial", command, "--dsn", dsn, *options, *extra],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: sundial {component} does not start: the hot queue is"), last
    assert expected in last, last


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_runner_whose_redis_is_gone_is_not_ready_and_says_so(hot: str, runners: Runners) -> None:
    with throwaway_redis() as own:
        runner = runners.start(hot, "--hot-queue-url", own.url)
        eventually(lambda: _readyz(runner.port)[0] == 200, what="the runner to be ready")
        own.kill()
        _status, text = eventually(
            lambda: (found := _readyz(runner.port))[0] == 503 and found, what="not ready"
        )
        assert text.startswith("Redis unreachable:"), text
        own.start()
        eventually(lambda: _readyz(runner.port)[0] == 200, what="ready again")


@pytest.mark.parametrize("switched_to", ["on", "off"])
def test_a_serving_runner_stops_claiming_when_the_database_is_switched_away_from_it(
    dsn: str, redis_url: str, runners: Runners, tmp_path: pathlib.Path, switched_to: str
) -> None:
    """A mode switched while runners serve (a chart upgrade runs the switch before it rolls
    the runners): the runner started in the other mode finishes the run it holds, claims
    nothing more, and exits 1 saying what to change."""
    ledger = tmp_path / "ledger"
    extra: list[str] = []
    if switched_to == "off":
        outbox.switch(dsn, on=True)
        extra = ["--hot-queue-url", redis_url]
    job = create_job(dsn, "loop.record_after")
    (held,) = submit(dsn, job, args={"seconds": 8, "path": str(ledger)})
    runner = runners.start(dsn, "--grace-seconds", "30", *extra)
    if switched_to == "off":
        eventually(lambda: _leased(redis_url, held), what="the run to be claimed")
    else:
        eventually(lambda: run_row(dsn, held)["state"] == "running", what="the run claimed")
    outbox.switch(dsn, on=switched_to == "on")
    code = runner.process.wait(60)
    (later,) = submit(dsn, job, args={"seconds": 0, "path": str(ledger)})
    assert code == 1, runner.log_path.read_text()
    (stopped,) = runner.logged("the database's hot queue was switched; stopping")
    expected = (
        "give the runner its Redis with --hot-queue-url"
        if switched_to == "on"
        else "start the runner without --hot-queue-url"
    )
    assert expected in stopped["problem"], stopped
    # The held run's handler ran to its end within the grace, once; the later run waits.
    assert [line.rsplit(" ", 1)[0] for line in ledger_lines(ledger)] == [f"{held} 1"]
    assert run_row(dsn, later)["state"] == "pending"
    # Claimed from PostgreSQL, its finish is written. Claimed from Redis, it is refused: the
    # switch off moved every pending run to a newer epoch, and PostgreSQL's claim runs it again.
    assert run_row(dsn, held)["state"] == ("completed" if switched_to == "on" else "pending")


def _started_after(dsn: str, run_id: int, since_sql: str) -> float:
    """Seconds from ``since_sql`` (an expression over the run ``r`` and its upstream ``u``) to
    the run's start, once it completed."""
    eventually(lambda: run_row(dsn, run_id)["state"] == "completed", what=f"run {run_id}")
    ((seconds,),) = _column(
        dsn,
        "SELECT extract(epoch FROM r.started_at - " + since_sql + ")::float8"
        " FROM job_runs r LEFT JOIN job_run_deps d ON d.run_id = r.id"
        " LEFT JOIN job_runs u ON u.id = d.depends_on"
        f" WHERE r.id = {int(run_id)}",
    )
    return float(seconds)  # type: ignore[arg-type]


def test_an_idle_runner_starts_a_submitted_run_and_a_released_dependent_at_once(
    hot: str, redis_url: str, runners: Runners
) -> None:
    """An idle relay waits to be woken instead of reading the outbox 50 times a second: by the
    NOTIFY of a submission, and by its runner's finish that released a dependent. Either still
    starts the run at once, not after the relay's longest idle interval (1 s): unwoken, each
    wait below would be anywhere in that second (the pauses vary so that they do not keep in
    step with the relay's)."""
    job = create_job(hot, "loop.noop")
    sleeper = create_job(hot, "loop.sleep")
    runners.start(hot, "--hot-queue-url", redis_url)
    (warm,) = submit(hot, job)
    eventually(lambda: run_row(hot, warm)["state"] == "completed", what="the first run")

    submitted = []
    for _ in range(5):
        time.sleep(3 + random.random())  # idle: the relay's interval has grown to its longest
        (run_id,) = submit(hot, job)
        submitted.append(_started_after(hot, run_id, "r.created_at"))

    async def chain() -> int:
        pool = await store_pool.open_pool(hot, min_size=1, max_size=1)
        try:
            upstream = await runs.submit(pool, sleeper, args={"seconds": 3 + random.random()})
            downstream = await runs.submit(pool, job, depends_on=[upstream.run_id])
            return downstream.run_id
        finally:
            await pool.close()

    released = _started_after(hot, asyncio.run(chain()), "u.finished_at")
    assert max(submitted) < 0.4 and released < 0.4, (submitted, released)


async def test_an_idle_relay_looks_seldom_and_at_once_when_woken(
    hot: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay's own loop, in this process against the real stores: idle, it reads the
    outbox about once a second (it did 50 times); woken, it delivers at once; never woken, a
    run still reaches Redis within its longest interval."""
    passes: list[float] = []
    looked = asyncio.Event()
    real_once = outbox.Relay.once

    async def counted(self: outbox.Relay, limit: int = 1000) -> outbox.Relayed:
        moved = await real_once(self, limit)
        passes.append(time.monotonic())
        looked.set()
        return moved

    monkeypatch.setattr(outbox.Relay, "once", counted)
    pool = await store_pool.open_pool(hot, min_size=1, max_size=2)
    client = aioredis.Redis.from_url(redis_url)
    woken = asyncio.Event()
    relaying = hot_queue.Relaying(
        lambda: pool, client, delivered=lambda: None, on_connection=lambda _: None, woken=woken
    )
    task = asyncio.create_task(relaying.relay())
    job = create_job(hot, "loop.noop")
    due = "{sundial:default}:due:default"

    async def delivered_within(run_id: int, seconds: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            if await client.zscore(due, member(run_id)) is not None:
                return time.monotonic() - started
            await asyncio.sleep(0.005)
        raise AssertionError(f"run {run_id} not in Redis within {seconds} s")

    try:
        await asyncio.sleep(3.0)
        idle_since = len(passes)
        await asyncio.sleep(3.0)
        assert len(passes) - idle_since <= 4  # 150 at one look per 20 ms

        # Just after a look, the next unwoken one is a second away: woken, it comes at once.
        looked.clear()
        await looked.wait()
        (woken_run,) = await asyncio.to_thread(submit, hot, job)
        woken.set()
        assert await delivered_within(woken_run, 0.5) < 0.3

        (unannounced,) = await asyncio.to_thread(submit, hot, job)
        await delivered_within(unannounced, 2.5)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.aclose()
        await pool.close()
