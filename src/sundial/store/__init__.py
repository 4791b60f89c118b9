"""The run store: PostgreSQL as Sundial's system of record for jobs, schedules and runs.

Internal: what Sundial's own parts call. An integrator's way in is ``sundial.client``, which
is built on the functions below and stays stable where these may change.

Import modules, not names (``from sundial.store import claims`` … ``claims.claim(...)``).
Every function takes a ``pool.Pool`` (psycopg's pool, whose connections raise store errors;
``pool.open_pool(dsn)``); lease expiry and due-ness are decided by the database clock. The
functions::

    pool.open_pool(dsn, *, min_size=1, max_size=4) -> Pool
    migrate.migrate(dsn, *, target=None) -> list[Migration]      # also `sundial migrate --dsn`

    runs.submit(pool, job: UUID | "namespace/name", *, args=None, priority=None, run_at=None,
                delay_seconds=0.0, idempotency_key=None, depends_on=(),
                schedule_id=None, fire_time=None) -> Submitted(run_id, created, state)
    runs.submit_graph(pool, {name: GraphNode(job, args=, priority=, run_at=, delay_seconds=,
                      idempotency_key=, depends_on=[names], depends_on_runs=[ids])})
        -> dict[name, Submitted]                                 # all or nothing; cycles refused
    runs.get(pool, run_id) -> RunInfo | None
    runs.cancel(pool, run_id, *, reason=...) -> CancelResult (cancelled|requested|already_finished)
    runs.replay(pool, run_id) -> int                               # dead letters back to pending

    claims.claim(pool, worker, *, queues=("default",), handlers=None, execution_models=None,
                 registered_model=False, limit=10, lease_seconds=30.0) -> list[ClaimedRun]
    claims.heartbeat(pool, worker, [(run_id, attempt), ...], *, lease_seconds=30.0)
        -> HeartbeatResult(extended, cancel_requested, lost)
    claims.finish(pool, worker, [Finish(run_id, attempt, failure, error, retry_delay_seconds,
                  detail)]) -> FinishResult(states, lost, released)
                                      # built by sundial.attempt.finishes (succeeded, failed, ...)

    schedules.upsert_job(pool, *, uid=, namespace=, name=, generation=, spec=) -> bool
                                                                  # a JobRun's inline job
    history.window(pool, [WindowRequest(schedule_id, successful, failed)]) -> {id: Window}
    history.runs(pool, run_ids) / history.schedules(pool, ids) / history.recent(pool, ...)
                                                  # the status mirror and `sundial runs`

    reaper.reap(pool, *, limit=1000) -> ReapResult(requeued, ended)  # lost-lease budget: ADR 0016
    runners.announce(pool, worker, *, queues=, handlers={name: model}, ttl_seconds=)
    runners.withdraw(pool, worker)
    runners.mark_unclaimable(pool, *, grace_seconds=5.0) -> [Unclaimable]  # why runs wait
    circuits.publish(pool, worker, [CircuitState(dependency, state, since)]) -> {dependency}
    circuits.open_for(pool, dependencies=None) -> {dependency: OpenCircuit}  # on live runners
    circuits.open_for_jobs(pool, job_ids) -> {job_id: OpenCircuit}  # by the job's dependency
    circuits.open_for_runs(pool, run_ids) -> {run_id: OpenCircuit}  # unfinished runs only
    reaper.promote_due(pool, *, limit=10000) -> int               # scheduled/retry_wait -> pending
    leases.acquire(pool, name, holder, *, ttl_seconds) -> LeaderLease | None
    leases.resign(pool, lease) -> bool
    leases.holder(pool, name) -> LeaderLease | None                # who leads, without renewing
    maintenance.ensure_partitions(pool, *, months_ahead=2, now=None)
    maintenance.archive_finished(pool, *, older_than_seconds, batch_size) -> int
    maintenance.drop_partitions_before(pool, cutoff, *, limit=24) -> DroppedPartitions
                                                  # all run by scheduler.maintainer
    monitoring.schedule_lag / pending_depth / finished_runs_by_job /
               attempts_per_completed_run / lease_expiries
    reconnect.Backoff(message, logger=) / reconnect.ERRORS   # every loop's wait for the database
    hot_queue.HotQueue(redis_client, queue)   # the Redis hot queue's half, not yet wired:
        .enqueue / .claim / .heartbeat / .release / .expire / .forget / .renew_epoch(pool)

Run states (``job_runs.state``, a CHECK-constrained enum; in Python ``sundial.scheduling.run_state``
with its sets ACTIVE, FINISHED and FAILED)::

    scheduled ──(run_at due: promote_due)──┐
    blocked ──(last upstream completes)────┤          ┌── completed
    retry_wait ──(backoff over: promote)───┤          ├── failed (not retried)
                                           ▼          ├── timed_out / dead_lettered (retries spent)
                                        pending ─claim─▶ running ──finish──┤
                                           ▲                │              └── cancelled
                                           └──reaper (lease expired)┘

Errors are in ``errors`` (one hierarchy under ``sundial.errors.SundialError``); psycopg's
errors become store errors at the pool's edge. Schema decisions:
docs/adr/0001-run-store-schema.md.

The schema lives in two forms, tied by a test (docs/adr/0020-one-word-for-each-concept.md):

* ``migrations/NNNN_name.sql`` — how every database, fresh or old, gets its schema. Applied
  files are never edited; a change is a new file.
* ``schema/`` — the reference: what the migrations add up to today. Every SQL function is
  defined once, in ``schema/functions/<name>.sql``, and the tables, indexes, triggers and
  views are in ``schema/tables/NN_topic.sql``. Read this, not the migrations, to know what a
  function does now. It is never applied to an installation.

``tests/integration/store/test_reference_schema.py`` builds one database from every migration
and one from ``schema/`` and compares them object by object (``pg_dump --schema-only``). To
change the schema: write the migration, then put the same definition in ``schema/`` (for a
function, copy the migration's ``CREATE OR REPLACE FUNCTION`` into its file and update its
"last changed by" line). The test names every object that differs and the file to fix.

A migration only adds: the previous release's runners keep serving while it is applied under
them. One that must drop or change what earlier code uses carries ``-- compatible-from: NNNN``,
and earlier code then refuses to start against that database (``schema_version``, which every
daemon calls when it starts).
"""
