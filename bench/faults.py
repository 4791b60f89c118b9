"""Faults against the real stack, each bounded in time, checked at a fenced sink: one table.

Not a test (tests/integration/runner_loop/test_faults_quick.py runs ``--quick`` and asserts on
it). Every fault gets a fresh database on one throwaway PostgreSQL and the shipped processes:
`sundial scheduler` (two where the fault needs a standby) and `sundial runner`s with 3 s leases.
The jobs are ``bench.sink`` (bench/bench_handlers.py): work for a while, then write (run id,
attempt, fencing token, idempotency key) into ``bench_sink`` with an upsert fenced by the
token, logging every write, accepted or not, in ``bench_sink_log``.

Per fault, after it ends and the stack has had its recovery budget:
* submitted: runs (or fires) the fault's load created; completed: runs in state completed;
* lost (must be 0): runs that should have completed and did not, plus completed runs whose
  completing attempt has no accepted write at the sink (a side effect lost);
* stale accepted (must be 0): sink writes accepted from an attempt older than one accepted
  before for the same key, and completed runs whose sink row is not the completing attempt;
* stale rejected: writes of superseded attempts the fence turned away (the fault bit);
* executed more than once: completed runs whose completing attempt is not the first (allowed:
  at least once); "written twice" in the notes counts keys the sink took from two attempts;
* duplicate fires (must be 0): schedule fires that made more than one run;
* recover s: from the fault's last injection until every run was terminal.

    .venv/bin/python bench/faults.py            # full sizes (10,000 schedules, 60 s outage)
    .venv/bin/python bench/faults.py --quick    # a few minutes
    .venv/bin/python bench/faults.py --quick --only runner-kill-9,poison
    .venv/bin/python bench/faults.py --quick --only oom-storm,eviction-storm  # bench/pod_faults.py
    .venv/bin/python bench/faults.py --quick --hot-queue  # on Redis, with Redis's own faults

With ``--hot-queue`` every fault's database has its hot queue on, a throwaway Redis (emptied
between faults) holds the queue, and the runners and schedulers are given its URL (the
schedulers' maintainer takes back leases and reconciles); the faults are those of the runner
and PostgreSQL plus Redis's own: ``redis-kill-9`` (no persistence: it comes back empty, and the
reconciler must give it back every run), ``redis-restart-aof`` (a restart from its
append-only file), ``redis-failover`` (the primary killed, its replica promoted and the
processes' address moved to it by bench/tcp_forwarder.py; ``redis-failover-caught-up``: the
same with a replica that has every acknowledged write) and ``relay-kill-9`` (every runner,
each a relay, killed while runs stream in). "holding" counts Redis's leases, which do not name
their runner.

The Kubernetes faults (kill -9 of the operator and of the pod launcher) are in
bench/faults_kube.py; they start the local control plane of hack/cluster once per run, or use
the cluster of ``--kubeconfig``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bench_handlers
import faults_kube
import pod_faults
import psycopg
import redis
import redis.exceptions
import stack
import tcp_forwarder

from sundial.localdev import postgres
from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis
from sundial.localdev.redis_server import command as redis_command
from sundial.scheduler import trigger
from sundial.store import fires, runs
from sundial.store import pool as store_pool
from sundial.store.hot_queue import outbox

LEASE = "3"
RUNNER_ARGS = ["--lease-seconds", LEASE, "--poll-seconds", "0.2", "--grace-seconds", "2"]
SCHEDULER_ARGS = ["--lease-ttl", LEASE, "--poll-seconds", "0.5"]
#: Every run with the fencing token of its last attempt where the record still has it (a run
#: archived to finished_runs keeps its attempt, not its epoch: its token is NULL).
RUNS_WITH_TOKENS = """
    SELECT id, job_id, state, attempt, idempotency_key,
           (coalesce(hot_epoch, 0) << 32) | attempt AS token
    FROM job_runs
    UNION ALL
    SELECT id, job_id, state, attempt, idempotency_key, NULL FROM finished_runs
"""


@dataclass
class Result:
    fault: str
    submitted: int = 0
    completed: int = 0
    lost: int = 0
    stale_accepted: int = 0
    stale_rejected: int = 0
    executed_twice: int = 0
    duplicate_fires: int = 0
    recover_seconds: float = float("nan")
    notes: list[str] = field(default_factory=list)
    load: str = ""

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.stale_accepted == 0 and self.duplicate_fires == 0


class Fault:
    """One fault's database, processes and audit."""

    def __init__(
        self,
        server: postgres.ThrowawayPostgres,
        name: str,
        rng: random.Random,
        resources: contextlib.ExitStack | None = None,
        hot: ThrowawayRedis | None = None,
        hot_url: str | None = None,
    ):
        self.server = server
        #: What outlives one fault and is closed with the run (faults_kube's cluster).
        self.resources = resources if resources is not None else contextlib.ExitStack()
        self.name = name
        self.rng = rng
        self.dsn = stack.create_database(server, "fault_" + name.replace("-", "_"))
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(bench_handlers.SINK_SCHEMA)
        env = {"SUNDIAL_BENCH_SINK": self.dsn}
        #: The hot queue's Redis, when this run is ``--hot-queue``, and the URL the processes
        #: reach it by (``hot_url``: a forwarder that a failover moves; default its own).
        self.hot = hot
        self.hot_url = hot_url or (hot.url if hot is not None else "")
        #: ``redis-failover``'s replica and the forwarder moved to it (set by ``run``).
        self.replica: ThrowawayRedis | None = None
        self.forwarder: tcp_forwarder.Forwarder | None = None
        if hot is not None:
            with redis.Redis.from_url(hot.url) as connection:
                connection.flushall()  # run ids start again at 1 in this database
            outbox.switch(self.dsn, on=True)
            env["SUNDIAL_HOT_QUEUE_URL"] = self.hot_url
        self.processes = stack.Processes(self.dsn, env=env, label=name)
        self.result = Result(name)
        self.expect_failed: set[str] = {"bench.poison"}
        self.last_injection = time.monotonic()

    def runner(self, slots: int = 100, extra: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
        return self.processes.runner(async_slots=slots, extra=[*RUNNER_ARGS, *extra])

    def scheduler(self, holder: str) -> subprocess.Popen[bytes]:
        return self.processes.scheduler(extra=[*SCHEDULER_ARGS, "--holder", holder])

    def wait_holding(self, child: subprocess.Popen[bytes], budget: float = 30) -> int:
        """Until ``child`` (a runner) holds leases; how many (0 if it never did in time). On
        the hot queue, until any runner holds leases in Redis (they do not name the runner)."""
        deadline = time.monotonic() + budget
        while self.hot is not None and time.monotonic() < deadline:
            held = self.redis_leases()
            if held:
                return held
            time.sleep(0.1)
        while time.monotonic() < deadline:
            [(held,)] = self.query(
                "SELECT count(*) FROM job_runs WHERE state = 'running' AND lease_owner LIKE %s",
                (f"%:{child.pid}",),
            )
            if held:
                return int(held)
            time.sleep(0.1)
        return 0

    def wait_leader(self, budget: float = 30) -> str | None:
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            holder = self.query(
                "SELECT holder FROM leader_leases WHERE name = %s AND expires_at > now()",
                (trigger.LEASE_NAME,),
            )
            if holder:
                return str(holder[0][0])
            time.sleep(0.1)
        return None

    def redis_leases(self) -> int:
        assert self.hot is not None
        try:
            with redis.Redis.from_url(self.hot_url, socket_timeout=2) as connection:
                return int(connection.zcard("{sundial:default}:leases"))
        except redis.exceptions.ConnectionError:
            return 0

    def job(self, handler: str = "bench.sink", **columns: Any) -> uuid.UUID:
        return stack.create_job(self.dsn, f"{handler}-{uuid.uuid4().hex[:6]}", handler, **columns)

    def submit(
        self, job: uuid.UUID, count: int, seconds: float, *, shielded: bool = False, **item: Any
    ) -> None:
        async def go() -> None:
            pool = await store_pool.open_pool(self.dsn, min_size=1, max_size=2)
            try:
                for start in range(0, count, 1000):
                    await runs.submit_many(
                        pool,
                        job,
                        [
                            runs.BatchItem(
                                args={"seconds": seconds, "shielded": shielded},
                                idempotency_key=f"{self.name}-{job}-{i}",
                                **item,
                            )
                            for i in range(start, min(count, start + 1000))
                        ],
                    )
            finally:
                await pool.close()

        asyncio.run(go())

    def query(self, text: str, params: Any = None) -> list[tuple[Any, ...]]:
        for attempt in range(40):
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                    return conn.execute(text, params).fetchall()
            except psycopg.OperationalError:
                if attempt == 39:
                    raise
                time.sleep(0.5)
        return []

    def wait_terminal(self, budget: float) -> None:
        """Until every run is terminal (or the budget is spent); sets recover_seconds."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            [(active,)] = self.query(
                "SELECT count(*) FROM job_runs WHERE state IN "
                "('scheduled', 'blocked', 'pending', 'running', 'retry_wait')"
            )
            if active == 0:
                self.result.recover_seconds = max(0.0, time.monotonic() - self.last_injection)
                return
            time.sleep(0.25)
        self.result.notes.append(f"not all terminal after {budget:.0f} s")

    def audit(self) -> Result:
        r = self.result
        rows = self.query(
            f"""
            SELECT r.id, r.state, r.attempt, coalesce(r.idempotency_key, 'run:' || r.id),
                   j.handler, s.attempt, s.token, r.token
            FROM ({RUNS_WITH_TOKENS}) r
            JOIN job_definitions j ON j.id = r.job_id
            LEFT JOIN bench_sink s
                ON s.idempotency_key = coalesce(r.idempotency_key, 'run:' || r.id)
            """
        )
        r.submitted = len(rows)
        for _run_id, state, attempt, _key, handler, sink_attempt, sink_token, token in rows:
            if handler in self.expect_failed:
                if state != "dead_lettered":
                    r.lost += 1
                continue
            if state != "completed":
                r.lost += 1
                continue
            r.completed += 1
            if handler in ("bench.noop", "bench.sleep") or handler.startswith("pod:"):
                continue  # no sink write (a pod run's sink is audited by faults_kube)
            if sink_attempt is None:
                r.lost += 1
            elif sink_attempt != attempt or (token is not None and sink_token != token):
                r.stale_accepted += 1
        [(stale_log, rejected, twice)] = self.query(
            """
            SELECT
              (SELECT count(*) FROM bench_sink_log l WHERE l.accepted AND EXISTS (
                 SELECT 1 FROM bench_sink_log e WHERE e.idempotency_key = l.idempotency_key
                   AND e.accepted AND e.seq < l.seq AND e.token >= l.token)),
              (SELECT count(*) FROM bench_sink_log WHERE NOT accepted),
              (SELECT count(*) FROM (SELECT idempotency_key FROM bench_sink_log
                 GROUP BY idempotency_key HAVING count(DISTINCT token) > 1) t)
            """
        )
        r.stale_accepted += stale_log
        r.stale_rejected = rejected
        r.executed_twice = sum(1 for row in rows if row[1] == "completed" and row[2] > 1)
        if twice:
            r.notes.append(f"written twice: {twice}")
        [(duplicates,)] = self.query(
            "SELECT count(*) FROM (SELECT schedule_id, fire_time FROM ("
            " SELECT schedule_id, fire_time FROM job_runs WHERE schedule_id IS NOT NULL"
            " UNION ALL SELECT schedule_id, fire_time FROM finished_runs"
            " WHERE schedule_id IS NOT NULL) f GROUP BY 1, 2 HAVING count(*) > 1) t"
        )
        r.duplicate_fires = duplicates
        r.load = stack.load_average()
        return r

    def close(self) -> None:
        self.processes.stop_all()


def _sleep_random(rng: random.Random, low: float, high: float) -> None:
    time.sleep(rng.uniform(low, high))


# -- the faults ---------------------------------------------------------------------------------


def runner_kill_9(f: Fault, size: Sizes) -> None:
    job = f.job()
    f.scheduler("s1")
    runners = [f.runner(50), f.runner(50)]
    # Twice the work of the other faults: a restarted runner takes seconds to start on a
    # busy machine, and each of the three kills should find its victim holding runs.
    f.submit(job, size.runs * 2, 1.0)
    held = []
    for _ in range(3):
        victim = f.rng.randrange(len(runners))
        f.wait_holding(runners[victim], budget=20)
        _sleep_random(f.rng, 0.0, 1.0)
        held.append(f.wait_holding(runners[victim], budget=5))
        runners[victim].kill()
        runners[victim].wait()
        f.last_injection = time.monotonic()
        runners[victim] = f.runner(50)
    f.result.notes.append(f"3 kill -9 at random points, holding {held} runs; restarted")
    f.wait_terminal(size.budget)


def runner_sigstop(f: Fault, size: Sizes) -> None:
    job = f.job()
    f.scheduler("s1")
    stopped, _other = f.runner(50), f.runner(50)
    f.submit(job, size.runs, 2.0, shielded=True)
    f.wait_holding(_other)
    held = f.wait_holding(stopped)
    stopped.send_signal(signal.SIGSTOP)
    time.sleep(float(LEASE) * 2.5)
    stopped.send_signal(signal.SIGCONT)
    f.last_injection = time.monotonic()
    f.result.notes.append(
        f"SIGSTOP {float(LEASE) * 2.5:.1f} s holding {held} runs, with a {LEASE} s lease"
    )
    f.wait_terminal(size.budget)


def scheduler_kill_9(f: Fault, size: Sizes) -> None:
    job = f.job()
    first_fire = stack.grid_instant(10, 5)
    stack.create_schedules(
        f.dsn, size.schedules // 10, first_fire=first_fire, spread_seconds=5,
        handler="bench.sink", run_args='{"seconds": 0.2}', cron_text="@every 10s",
    )  # fmt: skip
    schedulers = {"s1": f.scheduler("s1"), "s2": f.scheduler("s2")}
    f.runner(100)
    f.submit(job, size.runs // 2, 0.2, delay_seconds=4.0)
    kills = 0
    for _ in range(2):
        name = f.wait_leader()
        if name is None or name not in schedulers:
            f.result.notes.append("no leader to kill")
            continue
        _sleep_random(f.rng, 0.5, 2.5)
        kills += 1
        schedulers[name].kill()
        schedulers[name].wait()
        f.last_injection = time.monotonic()
        schedulers[name] = f.scheduler(name)
    time.sleep(max(0.0, (first_fire - datetime.now(UTC)).total_seconds() + 3))
    # Suspended once the fire is in: on a busy machine the leader's batches of a thousand
    # schedules take seconds, and a suspension before them would stop the fire itself.
    deadline = time.monotonic() + size.budget
    while (
        time.monotonic() < deadline
        and f.query("SELECT count(*) FROM schedule_fires WHERE fire_time = %s", (first_fire,))[0][0]
        < size.schedules // 10
    ):
        time.sleep(0.2)
    stack.suspend_schedules(f.dsn)
    f.wait_terminal(size.budget)
    [(fired,)] = f.query("SELECT count(*) FROM schedule_fires WHERE fire_time = %s", (first_fire,))
    missing = size.schedules // 10 - fired
    f.result.lost += missing
    f.result.notes.append(
        f"leader killed {kills} times; {fired} of {size.schedules // 10} fires made"
    )


def postgres_restart(f: Fault, size: Sizes) -> None:
    job = f.job()
    f.scheduler("s1")
    f.runner(50)
    f.runner(50)
    f.submit(job, size.runs, 1.0)
    for _ in range(2):
        _sleep_random(f.rng, 2.0, 4.0)
        f.server.restart(mode="fast")
        f.last_injection = time.monotonic()
    f.result.notes.append("pg_ctl restart -m fast, twice")
    f.wait_terminal(size.budget)


#: How long the primary stays dead before its standby is promoted: an orchestrator's detection
#: time (Patroni's loop_wait and ttl, CloudNativePG's probes) shortened to keep the run quick.
PROMOTE_AFTER_SECONDS = 2.0


def postgres_failover(f: Fault, size: Sizes) -> None:
    """The primary is killed (SIGKILL, every process of it) under load and its synchronous
    standby promoted. The stack follows through one DSN, a libpq host list with
    ``target_session_attrs=read-write``, as it would through CloudNativePG's ``-rw`` Service.
    Synchronous replication: a claim or finish the primary acknowledged is on the standby."""
    primary = f.resources.enter_context(
        postgres.throwaway_postgres(extra_settings={"synchronous_commit": "on"})
    )
    database = stack.create_database(primary, "failover")
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(bench_handlers.SINK_SCHEMA)
    standby = f.resources.enter_context(contextlib.closing(_Stopping(postgres.ThrowawayPostgres(
        extra_settings={"synchronous_commit": "on"}
    ))))  # fmt: skip
    standby.server.start_standby_of(primary)
    with psycopg.connect(primary.dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while not conn.execute(
            "SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'"
        ).fetchall():
            if time.monotonic() > deadline:
                raise RuntimeError("the standby never became synchronous")
            time.sleep(0.1)
    f.dsn = (
        f"postgresql://{primary.user}@127.0.0.1:{primary.port},127.0.0.1:{standby.server.port}"
        "/failover?target_session_attrs=read-write"
    )
    f.processes.stop_all()
    f.processes = stack.Processes(
        f.dsn, env={"SUNDIAL_BENCH_SINK": f.dsn}, label="postgres-promoted"
    )
    job = f.job()
    f.scheduler("s1")
    f.runner(50)
    f.runner(50)
    f.submit(job, size.runs, 1.0)
    _sleep_random(f.rng, 2.0, 3.0)
    primary.kill()
    f.last_injection = time.monotonic()
    time.sleep(PROMOTE_AFTER_SECONDS)
    standby.server.promote()
    promoted = time.time()
    deadline = time.monotonic() + size.budget
    first_claim = None
    while first_claim is None and time.monotonic() < deadline:
        [(first_claim,)] = f.query(
            "SELECT extract(epoch FROM min(started_at)) FROM job_runs"
            " WHERE started_at > to_timestamp(%s)",
            (promoted,),
        )
        time.sleep(0.05)
    f.wait_terminal(size.budget)
    claim = "none" if first_claim is None else f"{float(first_claim) - promoted:.1f} s"
    f.result.notes.append(
        f"primary killed, standby promoted {PROMOTE_AFTER_SECONDS:.0f} s later; "
        f"first claim on the new primary {claim} after its promotion"
    )


class _Stopping:
    """A standby server for ``contextlib.closing``: stopped (and its directory removed)."""

    def __init__(self, server: postgres.ThrowawayPostgres) -> None:
        self.server = server

    def close(self) -> None:
        self.server.stop()


def redis_kill_9(f: Fault, size: Sizes) -> None:
    """Redis without persistence killed under load and started again empty, twice: the epoch
    changes, every lease and due run is gone, and the reconciler gives them back."""
    assert f.hot is not None, "redis-kill-9 runs with --hot-queue"
    job = f.job()
    f.scheduler("s1")
    f.runner(50)
    f.runner(50)
    f.submit(job, size.runs, 1.0)
    held = []
    for _ in range(2):
        held.append(f.wait_holding(f.processes.children[-1], budget=20))
        _sleep_random(f.rng, 0.0, 1.0)
        f.hot.kill()
        time.sleep(1.0)
        f.hot.start()
        f.last_injection = time.monotonic()
        time.sleep(2.0)
    f.result.notes.append(f"kill -9 of Redis (no persistence) holding {held} leases, twice")
    f.wait_terminal(size.budget)


def redis_restart_aof(f: Fault, size: Sizes) -> None:
    """Redis restarted from its append-only file under load (a new run id, so a new epoch)."""
    assert f.hot is not None, "redis-restart-aof runs with --hot-queue"
    job = f.job()
    f.scheduler("s1")
    f.runner(50)
    f.runner(50)
    f.submit(job, size.runs, 1.0)
    held = f.wait_holding(f.processes.children[-1], budget=20)
    _sleep_random(f.rng, 0.0, 1.0)
    f.hot.restart()
    f.last_injection = time.monotonic()
    f.result.notes.append(f"Redis restarted from its append-only file holding {held} leases")
    f.wait_terminal(size.budget)


def redis_failover(f: Fault, size: Sizes, *, caught_up: bool = False) -> None:
    """A primary with a replica (asynchronous replication), the primary killed -9 under load and
    the replica promoted a second later, the processes' address moved to it (as a Service or a
    Sentinel-aware proxy moves): what the replica had not received is lost, the promoted
    server is a new epoch, and the reconciler gives it back what it misses. Killed about a
    second after the replica started to follow, the replica has usually received nothing;
    ``caught_up``: the kill waits until the replica acknowledged every write so far (``WAIT``),
    so the leases the runners hold survive the promotion under the old epoch."""
    assert f.replica is not None and f.forwarder is not None, "redis-failover runs with run()"
    job = f.job()
    f.scheduler("s1")
    f.runner(50)
    f.runner(50)
    f.submit(job, size.runs, 1.0)
    held = f.wait_holding(f.processes.children[-1], budget=20)
    _sleep_random(f.rng, 0.0, 1.0)
    assert f.hot is not None
    if caught_up:
        acknowledged = redis_command(f.hot.port, "WAIT", "1", "5000", timeout=10)
        f.result.notes.append(f"{acknowledged} replica caught up before the kill")
    f.hot.kill()
    time.sleep(1.0)
    f.replica.promote()
    f.forwarder.move(f.replica.port)
    f.last_injection = time.monotonic()
    f.result.notes.append(
        f"primary killed -9 holding {held} leases, its replica promoted 1 s later"
    )
    f.wait_terminal(size.budget)


def redis_failover_caught_up(f: Fault, size: Sizes) -> None:
    """``redis-failover`` with a replica that has every write the primary acknowledged."""
    redis_failover(f, size, caught_up=True)


def relay_kill_9(f: Fault, size: Sizes) -> None:
    """Every runner (each relays the outbox to Redis) killed -9 three times while runs stream
    in, two new runners a second later: the entries a dying relay had taken stay for the next
    (its transaction rolls back), and a delivery that reached Redis first is made again,
    harmlessly (idempotent by run id)."""
    assert f.hot is not None, "relay-kill-9 runs with --hot-queue"
    job = f.job()
    f.scheduler("s1")
    runners = [f.runner(50), f.runner(50)]

    async def stream() -> None:
        pool = await store_pool.open_pool(f.dsn, min_size=1, max_size=2)
        try:
            for start in range(0, size.runs, 10):
                items = [
                    runs.BatchItem(args={"seconds": 0.5}, idempotency_key=f"{f.name}-{i}")
                    for i in range(start, min(size.runs, start + 10))
                ]
                await runs.submit_many(pool, job, items)
                await asyncio.sleep(0.1)
        finally:
            await pool.close()

    streaming = threading.Thread(target=asyncio.run, args=(stream(),), name="submissions")
    streaming.start()
    waiting = []
    for _ in range(3):
        f.wait_holding(runners[0], budget=20)
        _sleep_random(f.rng, 0.3, 1.0)
        [(entries,)] = f.query("SELECT count(*) FROM hot_queue_outbox")
        waiting.append(int(entries))
        for runner in runners:
            runner.kill()
        for runner in runners:
            runner.wait()
        f.last_injection = time.monotonic()
        time.sleep(1.0)
        runners = [f.runner(50), f.runner(50)]
    streaming.join()
    f.result.notes.append(
        f"every runner killed -9 three times under a stream of submissions ({waiting} outbox"
        " entries at the kills); two new runners 1 s later"
    )
    f.wait_terminal(size.budget)


def two_leaders(f: Fault, size: Sizes) -> None:
    count = size.schedules // 5
    first_fire = stack.grid_instant(10, 3)
    stack.create_schedules(
        f.dsn, count, first_fire=first_fire, spread_seconds=5,
        handler="bench.sink", run_args='{"seconds": 0.1}', cron_text="@every 10s",
    )  # fmt: skip
    f.scheduler("s1")
    f.runner(200)

    async def rogue() -> None:
        # A second leader that ignores the lease (one that lost it mid-tick, a split brain):
        # the trigger's own transaction, in a loop, beside `sundial scheduler`.
        pool = await store_pool.open_pool(f.dsn, min_size=1, max_size=2)
        try:
            stop = first_fire + timedelta(seconds=4)
            while datetime.now(UTC) < stop:
                await fires.fire_due(pool, now=datetime.now(UTC), batch_size=100)
                await asyncio.sleep(0.05)
        finally:
            await pool.close()

    asyncio.run(rogue())
    stack.suspend_schedules(f.dsn)
    f.last_injection = time.monotonic()
    f.wait_terminal(size.budget)
    [(fired,)] = f.query("SELECT count(*) FROM schedule_fires WHERE fire_time = %s", (first_fire,))
    f.result.lost += count - fired
    f.result.notes.append(f"a lease-ignoring trigger beside the leader; {fired}/{count} fired")


def poison(f: Fault, size: Sizes) -> None:
    good, bad = f.job(), f.job("bench.poison", max_retries=2, backoff_base_seconds=0.1)
    f.scheduler("s1")
    f.runner(100)
    f.submit(good, size.runs, 0.1)
    f.submit(bad, 5, 0.0)
    f.last_injection = time.monotonic()
    f.wait_terminal(size.budget)
    [(dead,)] = f.query("SELECT count(*) FROM job_runs WHERE state = 'dead_lettered'")
    f.result.notes.append(f"5 poison runs (max_retries 2): {dead} dead-lettered")


def downstream_outage(f: Fault, size: Sizes) -> None:
    job = f.job("bench.downstream", max_retries=20, backoff_base_seconds=0.5,
                backoff_cap_seconds=2.0)  # fmt: skip
    f.query(
        "INSERT INTO bench_outage VALUES ('bench-downstream', clock_timestamp() + %s) RETURNING 1",
        (timedelta(seconds=size.outage),),
    )
    f.scheduler("s1")
    f.runner(50)
    f.submit(job, size.runs // 2, 0.0)
    waiting_peak = 0
    stop = time.monotonic() + size.outage
    while time.monotonic() < stop:
        [(waiting,)] = f.query("SELECT count(*) FROM job_runs WHERE state = 'retry_wait'")
        waiting_peak = max(waiting_peak, waiting)
        time.sleep(0.5)
    f.last_injection = time.monotonic()
    f.wait_terminal(size.budget + 40)  # the breaker stays open 30 s before a probe
    [(failed_attempts, attempts)] = f.query(
        "SELECT count(*) FILTER (WHERE failure_reason IS NOT NULL), count(*) FROM job_run_attempts"
    )
    [(max_attempt,)] = f.query(f"SELECT max(attempt) FROM {stack.ALL_RUNS} r")
    f.result.notes.append(
        f"outage {size.outage:.0f} s: up to {waiting_peak} runs waiting; "
        f"{failed_attempts} failed attempts of {attempts}; max attempt {max_attempt}"
    )


def thundering(f: Fault, size: Sizes) -> None:
    spread = 10 if size.quick else 60
    first_fire = stack.grid_instant(spread, 5)
    stack.create_schedules(
        f.dsn, size.schedules, first_fire=first_fire, spread_seconds=spread,
        handler="bench.sink", run_args='{"seconds": 0.1}', cron_text=f"@every {spread}s",
    )  # fmt: skip
    f.scheduler("s1")
    f.runner(300)
    f.runner(300)
    # Suspended once the fire is in (the trigger takes the whole minute's batch first).
    deadline = time.monotonic() + size.budget
    while time.monotonic() < deadline and not f.query(
        "SELECT 1 FROM schedules WHERE next_fire_time > %s HAVING count(*) = %s",
        (first_fire, size.schedules),
    ):
        time.sleep(0.2)
    stack.suspend_schedules(f.dsn)
    f.last_injection = time.monotonic()
    f.wait_terminal(size.budget + spread)
    [(fired,)] = f.query("SELECT count(*) FROM schedule_fires WHERE fire_time = %s", (first_fire,))
    f.result.lost += size.schedules - fired
    lags = sorted(
        float(x)
        for (x,) in f.query(
            "SELECT extract(epoch FROM started_at - run_at)::float8"
            f" FROM {stack.ALL_RUNS} r WHERE started_at IS NOT NULL"
        )
    )
    f.result.notes.append(
        f"{size.schedules:,} schedules at one instant, spread {spread} s: {fired:,} fired; "
        f"lag p50 {stack.quantile(lags, 0.5) * 1000:.0f} ms p99 "
        f"{stack.quantile(lags, 0.99) * 1000:.0f} ms"
    )


@dataclass(frozen=True)
class Sizes:
    quick: bool
    runs: int
    schedules: int
    outage: float
    budget: float


FAULTS: dict[str, Callable[[Fault, Sizes], None]] = {
    "runner-kill-9": runner_kill_9,
    "runner-sigstop": runner_sigstop,
    "scheduler-kill-9": scheduler_kill_9,
    "postgres-restart-x2": postgres_restart,
    "postgres-failover": postgres_failover,
    "two-leaders": two_leaders,
    "poison": poison,
    "downstream-outage": downstream_outage,
    "thundering-schedules": thundering,
    # Faults of other modules: each module has its own FAULTS.
    **faults_kube.FAULTS,
}
FAULTS.update(pod_faults.FAULTS)  # on the real node: run with --only or --real-node
#: Redis's own faults: with --hot-queue only.
REDIS_FAULTS: dict[str, Callable[[Fault, Sizes], None]] = {
    "redis-kill-9": redis_kill_9,
    "redis-restart-aof": redis_restart_aof,
    "redis-failover": redis_failover,
    "redis-failover-caught-up": redis_failover_caught_up,
    "relay-kill-9": relay_kill_9,
}
FAULTS.update(REDIS_FAULTS)
#: What --hot-queue runs by default: the runner's and PostgreSQL's faults, then Redis's.
HOT_QUEUE_FAULTS = (
    "runner-kill-9", "runner-sigstop", "postgres-restart-x2", "poison", *REDIS_FAULTS,
)  # fmt: skip


def run(options: argparse.Namespace) -> list[Result]:
    size = (
        Sizes(quick=True, runs=600, schedules=1000, outage=10, budget=40)
        if options.quick
        else Sizes(quick=False, runs=5000, schedules=10_000, outage=60, budget=120)
    )
    default = [
        n
        for n in FAULTS
        if (options.real_node or n not in pod_faults.FAULTS) and n not in REDIS_FAULTS
    ]
    if options.hot_queue:
        default = list(HOT_QUEUE_FAULTS)
    names = options.only.split(",") if options.only else default
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise SystemExit(f"unknown fault(s) {unknown}: pick from {', '.join(FAULTS)}")
    rng = random.Random(options.seed)
    results = []
    with stack.throwaway(max_connections=300) as server, contextlib.ExitStack() as resources:
        hot = None
        if options.hot_queue:
            hot = resources.enter_context(throwaway_redis(persistence="aof"))
        for name in names:
            started = time.monotonic()
            if hot is not None:  # a Redis of its own: empty, with the persistence it needs
                hot.kill()
                shutil.rmtree(hot.base_dir / "appendonlydir", ignore_errors=True)
                hot.persistence = "none" if name == "redis-kill-9" else "aof"
                hot.start()
            replica = forwarder = None
            if hot is not None and name.startswith("redis-failover"):
                replica = ThrowawayRedis(persistence="aof").start()
                replica.replica_of(hot)
                forwarder = tcp_forwarder.Forwarder(hot.port)
            fault = Fault(
                server, name, rng, resources, hot=hot, hot_url=forwarder and forwarder.url
            )
            fault.replica, fault.forwarder = replica, forwarder
            try:
                FAULTS[name](fault, size)
                result = fault.audit()
            finally:
                fault.close()
                if forwarder is not None:
                    forwarder.close()
                if replica is not None:
                    replica.stop()
            result.notes.append(f"{time.monotonic() - started:.0f} s")
            results.append(result)
            print(f"  {name}: lost {result.lost}, stale {result.stale_accepted}", flush=True)
    return results


def render(results: list[Result], options: argparse.Namespace) -> str:
    headers = [
        "fault", "submitted", "completed", "lost", "stale accepted", "stale rejected",
        "executed >1", "duplicate fires", "recover s", "load 1/5/15", "notes",
    ]  # fmt: skip
    rows = [
        [
            r.fault, r.submitted, r.completed, r.lost, r.stale_accepted, r.stale_rejected,
            r.executed_twice, r.duplicate_fires, f"{r.recover_seconds:.1f}", r.load,
            "; ".join(r.notes),
        ]
        for r in results
    ]  # fmt: skip
    command = ".venv/bin/python bench/faults.py" + (" --quick" if options.quick else "")
    command += " --real-node" if options.real_node else ""
    command += " --hot-queue" if options.hot_queue else ""
    if options.only:
        command += f" --only {options.only}"
    return stack.table(headers, rows) + f"\nreproduce: {command} --seed {options.seed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated faults: " + ", ".join(FAULTS))
    parser.add_argument("--seed", type=int, default=int(time.time()) % 10_000)
    parser.add_argument("--real-node", action="store_true", help="also the real node's storms")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--hot-queue",
        action="store_true",
        help="every fault on the Redis hot queue, plus Redis's own faults",
    )
    parser.add_argument(
        "--kubeconfig",
        help="a running local cluster for the Kubernetes faults (default: start one)",
    )
    options = parser.parse_args()
    if options.kubeconfig:
        faults_kube.KUBECONFIG = Path(options.kubeconfig)
    results = run(options)
    print()
    print(render(results, options))
    if options.json:
        with open(options.json, "w") as out:
            json.dump([r.__dict__ for r in results], out, indent=1)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
