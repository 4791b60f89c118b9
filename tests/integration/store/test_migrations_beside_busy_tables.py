"""Migrations applied while other sessions use the tables they change, as in a rolling upgrade:
a migration that loses a deadlock or waits too long for a lock rolls back and is tried again,
a writer never waits behind it for longer than one try's lock timeout, and a lock that never
comes ends in an error that says what to do.

Migration 0340 is the real case: it builds an index on ``job_runs`` (a share lock) and then
drops the index it replaces (an exclusive lock). A runner's transaction that read ``job_runs``
and then writes it, beside it, is a deadlock (a rolling upgrade's test met one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg
import pytest

from sundial.store import errors, migrate

BEFORE = 330
#: The migration that takes a share lock on job_runs and then an exclusive one.
SHARE_THEN_EXCLUSIVE = 340


def _waiting_for_job_runs(dsn: str) -> int:
    """How many sessions wait for a lock on job_runs."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'job_runs'::regclass"
        ).fetchone()
        return int(row[0]) if row else 0


def _until(check: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not seen within {within} s: {what}"
        time.sleep(0.02)


def _deadlocks(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        return int(row[0]) if row else 0


class Migrating:
    """``migrate.migrate`` in a thread: what it applied, or what it raised."""

    def __init__(self, dsn: str, **options: float) -> None:
        self.applied: list[int] = []
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(dsn,), kwargs=options)
        self._thread.start()

    def _run(self, dsn: str, **options: float) -> None:
        try:
            self.applied = [m.version for m in migrate.migrate(dsn, **options)]
        except BaseException as error:
            self.failure = error

    def join(self, within: float) -> None:
        self._thread.join(within)
        assert not self._thread.is_alive(), f"migrate still running after {within} s"


def _migrated_before(make_database: Callable[..., str]) -> str:
    dsn = make_database()
    migrate.migrate(dsn, target=BEFORE)
    assert migrate.applied_versions(dsn)[-1] == BEFORE
    return dsn


def test_a_migration_that_loses_a_deadlock_is_tried_again(
    make_database: Callable[..., str],
) -> None:
    """The order the rolling upgrade met: the migration holds its share lock (building the
    index) while a runner that read job_runs waits to write it; the migration then asks for
    its exclusive lock, which the runner's read holds off: PostgreSQL ends the migration's
    try at once (a deadlock), and the migration is tried again once the runner is through."""
    dsn = _migrated_before(make_database)
    deadlocks_before = _deadlocks(dsn)
    with psycopg.connect(dsn) as runner, psycopg.connect(dsn) as writer:
        runner.execute("SELECT count(*) FROM job_runs")  # the runner's read
        # Another writer keeps the migration waiting for its share lock, so the runner's
        # write can queue up behind it before the migration holds it.
        writer.execute("LOCK TABLE job_runs IN ROW EXCLUSIVE MODE")
        migrating = Migrating(dsn)
        _until(lambda: _waiting_for_job_runs(dsn) == 1, "the migration waiting for job_runs")

        def write() -> None:
            runner.execute("LOCK TABLE job_runs IN ROW EXCLUSIVE MODE")
            time.sleep(0.3)
            runner.commit()

        runner_writes = threading.Thread(target=write)
        runner_writes.start()
        _until(lambda: _waiting_for_job_runs(dsn) == 2, "the runner's write queued behind it")
        writer.commit()  # the migration takes its share lock; the runner's write waits on it
        runner_writes.join(30)
        assert not runner_writes.is_alive()
    migrating.join(within=60)
    assert migrating.failure is None, migrating.failure
    assert SHARE_THEN_EXCLUSIVE in migrating.applied
    assert migrate.applied_versions(dsn) == [m.version for m in migrate.available()]
    _until(lambda: _deadlocks(dsn) > deadlocks_before, "the deadlock PostgreSQL counted")


def test_a_writer_waits_behind_a_waiting_migration_no_longer_than_one_try(
    make_database: Callable[..., str],
) -> None:
    """A long reader holds job_runs past several of the migration's tries; a writer that comes
    meanwhile is through within about one lock timeout, not when the reader ends."""
    dsn = _migrated_before(make_database)
    reader_holds = 3 * migrate.LOCK_TIMEOUT_MS / 1000
    with psycopg.connect(dsn) as reader, psycopg.connect(dsn) as writer:
        reader.execute("SELECT count(*) FROM job_runs")
        started = time.monotonic()
        migrating = Migrating(dsn)
        _until(lambda: _waiting_for_job_runs(dsn) > 0, "the migration waiting for job_runs")
        asked = time.monotonic()
        writer.execute("LOCK TABLE job_runs IN ROW EXCLUSIVE MODE")
        waited = time.monotonic() - asked
        writer.commit()
        time.sleep(max(0.0, reader_holds - (time.monotonic() - started)))
        reader.commit()
    migrating.join(within=60)
    assert migrating.failure is None, migrating.failure
    assert SHARE_THEN_EXCLUSIVE in migrating.applied
    assert waited < migrate.LOCK_TIMEOUT_MS / 1000 + 1.0, (
        f"the writer waited {waited:.1f} s behind the migration, the reader held {reader_holds} s"
    )


def test_a_lock_that_never_comes_ends_in_an_error_that_says_what_to_do(
    make_database: Callable[..., str],
) -> None:
    dsn = _migrated_before(make_database)
    with psycopg.connect(dsn) as reader:
        reader.execute("SELECT count(*) FROM job_runs")
        with pytest.raises(errors.MigrationError) as raised:
            migrate.migrate(dsn, patience_seconds=3)
        reader.rollback()
    message = str(raised.value)
    assert f"{SHARE_THEN_EXCLUSIVE:04d}_" in message
    assert "could not take its locks" in message and "pg_stat_activity" in message
    assert migrate.applied_versions(dsn)[-1] == BEFORE, "a failed try leaves nothing behind"
    # The long transaction over, the same command goes on.
    assert SHARE_THEN_EXCLUSIVE in [m.version for m in migrate.migrate(dsn)]
