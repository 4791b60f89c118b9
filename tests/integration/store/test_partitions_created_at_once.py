"""The history's month partitions are created on first need, by whoever needs them first: the
maintainer ahead of time, a finish recording the month's first failed attempt, an archive pass.
Several of them at once must all succeed, or a finish fails for nothing at every month's turn."""

from __future__ import annotations

import threading

import psycopg


def _ensure_together(dsn: str, month: str, sessions: int) -> list[BaseException]:
    """Open ``sessions`` transactions, release them at one barrier, and have each create the
    partitions of ``month``; return what each raised."""
    barrier = threading.Barrier(sessions)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            with psycopg.connect(dsn) as conn, conn.transaction():
                conn.execute("SELECT 1")
                barrier.wait(timeout=30)
                conn.execute("SELECT sundial_ensure_month_partition(%s::timestamptz)", (month,))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_sessions_creating_the_same_month_at_once_all_succeed(store_dsn: str):
    months = [f"2101-{m:02d}-15T00:00:00Z" for m in range(1, 13)]
    for month in months:
        assert _ensure_together(store_dsn, month, sessions=12) == []
    with psycopg.connect(store_dsn) as conn:
        created = conn.execute(
            "SELECT count(*) FROM pg_class"
            " WHERE relname ~ '^(finished_runs|job_run_attempts)_2101[0-9]{2}$'"
        ).fetchone()
    assert created == (24,)


def test_a_second_creator_of_the_month_waits_for_the_first_and_succeeds(store_dsn: str):
    """A finish creates the partition a failed attempt needs inside its own transaction;
    a second creator of the same month waits for it instead of failing either."""
    with psycopg.connect(store_dsn) as first, psycopg.connect(store_dsn) as second:
        first.execute("BEGIN")
        first.execute("SELECT sundial_ensure_month_partition('2102-03-01T00:00:00Z')")
        done = threading.Event()
        failure: list[BaseException] = []

        def create_again() -> None:
            try:
                second.execute("SELECT sundial_ensure_month_partition('2102-03-20T00:00:00Z')")
            except BaseException as error:
                failure.append(error)
            done.set()

        thread = threading.Thread(target=create_again)
        thread.start()
        assert not done.wait(0.5), "the second creator did not wait for the first"
        first.execute("COMMIT")
        thread.join(10)
        assert done.is_set()
        assert failure == []
