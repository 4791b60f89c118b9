"""Migrations: stepwise upgrades equal a fresh install; concurrent runs apply each file once."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable

import psycopg
import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.localdev import postgres
from sundial.store import errors, migrate


def schema_dump(dsn: str) -> str:
    pg_dump = postgres.find_postgres_bin_dir() / "pg_dump"
    result = subprocess.run(
        [str(pg_dump), "--schema-only", "--no-owner", "--no-privileges", "--dbname", dsn],
        capture_output=True,
        text=True,
        check=True,
    )
    # Drop comments and the dump's random restrict key (PostgreSQL >= 17.6).
    lines = [
        line
        for line in result.stdout.splitlines()
        if line and not line.startswith("--") and not line.startswith("\\")
    ]
    return "\n".join(lines)


def test_stepwise_migrations_equal_a_fresh_install(make_database: Callable[..., str]) -> None:
    fresh = make_database()
    stepwise = make_database()
    migrate.migrate(fresh)
    versions = [m.version for m in migrate.available()]
    assert len(versions) >= 2, "the comparison only means something with several migrations"
    for version in versions:
        applied = migrate.migrate(stepwise, target=version)
        assert [m.version for m in applied] == [version]
    fresh_schema = schema_dump(fresh)
    assert "CREATE TABLE public.job_runs" in fresh_schema
    assert schema_dump(stepwise) == fresh_schema


def test_migrating_again_changes_nothing(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    migrate.migrate(dsn)
    before = schema_dump(dsn)
    assert migrate.migrate(dsn) == []
    assert schema_dump(dsn) == before


def test_concurrent_migrations_apply_each_file_once(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    applied: list[list[int]] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            applied.append([m.version for m in migrate.migrate(dsn)])
        except BaseException as error:  # pragma: no cover - reported below
            failures.append(error)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(v for versions in applied for v in versions) == [
        m.version for m in migrate.available()
    ]
    assert migrate.applied_versions(dsn) == [m.version for m in migrate.available()]


def test_an_edited_applied_migration_is_refused(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    migrate.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
    with pytest.raises(errors.MigrationError, match="changed after it was applied"):
        migrate.migrate(dsn)


def test_a_database_migrated_before_comments_were_reworded_migrates_on(
    make_database: Callable[..., str],
) -> None:
    """The checksums an older release recorded for the migrations whose comments alone were
    reworded are accepted; any other checksum for them is still refused."""
    dsn = make_database()
    migrate.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for version, earlier in migrate.REWORDED.items():
            conn.execute(
                "UPDATE schema_migrations SET checksum = %s WHERE version = %s", (earlier, version)
            )
    assert migrate.migrate(dsn) == []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 170")
    with pytest.raises(errors.MigrationError, match="changed after it was applied"):
        migrate.migrate(dsn)


def test_sundial_migrate_command(make_database: Callable[..., str]) -> None:
    dsn = make_database()
    runner = CliRunner()
    first = runner.invoke(cli.main, ["migrate", "--dsn", dsn])
    assert first.exit_code == 0, first.output
    assert "applied 0001_jobs_and_schedules" in first.output
    again = runner.invoke(cli.main, ["migrate", "--dsn", dsn])
    assert again.exit_code == 0 and "schema is up to date" in again.output
