"""A process checks at start that it can run against the database's schema: it refuses one
that lacks its migrations and one that a newer release contracted past it, and keeps running
against a newer schema whose migrations only added (the rolling upgrade's normal state)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import psycopg
import pytest

from sundial.store import errors, migrate, schema_version
from sundial.store import pool as store_pool
from support.store import record_newer_migration

NEWEST = migrate.available()[-1]


def _check(dsn: str, component: str = "runner") -> None:
    async def check() -> None:
        opened = await store_pool.open_pool(dsn, min_size=1, max_size=1)
        try:
            await schema_version.require_compatible(opened, component)
        finally:
            await opened.close()

    asyncio.run(check())


def _record_newer(dsn: str, *, compatible_from: int | None) -> int:
    version = NEWEST.version + 10
    record_newer_migration(dsn, version, compatible_from=compatible_from)
    return version


def test_code_runs_against_the_schema_it_migrated(store_dsn: str) -> None:
    _check(store_dsn)


def test_a_database_never_migrated_is_refused_with_the_command_to_run(
    make_database: Callable[..., str],
) -> None:
    with pytest.raises(errors.SchemaMismatchError) as raised:
        _check(make_database(), "operator")
    message = str(raised.value)
    assert "no Sundial schema yet" in message
    assert "sundial migrate" in message and "operator" in message
    assert f"{NEWEST.version:04d}_{NEWEST.name}" in message


def test_a_schema_behind_this_code_is_refused_with_both_versions(
    make_database: Callable[..., str],
) -> None:
    dsn = make_database()
    earlier = migrate.available()[-2].version
    migrate.migrate(dsn, target=earlier)
    with pytest.raises(errors.SchemaMismatchError) as raised:
        _check(dsn, "scheduler")
    message = str(raised.value)
    assert f"at migration {earlier:04d}" in message
    assert f"needs {NEWEST.version:04d}_{NEWEST.name}" in message
    assert "sundial migrate" in message
    migrate.migrate(dsn)
    _check(dsn, "scheduler")


def test_a_newer_schema_that_only_added_keeps_older_code_running(store_dsn: str) -> None:
    _record_newer(store_dsn, compatible_from=None)
    _check(store_dsn)


def test_a_newer_schema_that_older_code_cannot_use_is_refused(store_dsn: str) -> None:
    version = _record_newer(store_dsn, compatible_from=NEWEST.version + 10)
    with pytest.raises(errors.SchemaMismatchError) as raised:
        _check(store_dsn, "runner")
    message = str(raised.value)
    assert f"migrated by a newer Sundial to migration {version:04d}" in message
    assert f"knows migrations up to {NEWEST.version:04d}_{NEWEST.name}" in message
    assert "run this runner from the release that migrated the database" in message


def test_a_contract_step_that_still_admits_this_code_keeps_it_running(store_dsn: str) -> None:
    _record_newer(store_dsn, compatible_from=NEWEST.version)
    _check(store_dsn)


def test_a_database_migrated_before_the_marker_existed_is_read_and_upgraded(
    store_dsn: str,
) -> None:
    with psycopg.connect(store_dsn) as conn:
        conn.execute("ALTER TABLE schema_migrations DROP COLUMN compatible_from")
    _check(store_dsn)
    assert migrate.migrate(store_dsn) == []
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.columns"
            " WHERE table_name = 'schema_migrations' AND column_name = 'compatible_from'"
        ).fetchone()
    assert row == (1,)


def test_migrate_records_the_marker_of_a_migration_that_contracts(
    store_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = migrate.available()
    contract = migrate.Migration(
        NEWEST.version + 1,
        "drop_what_older_code_reads",
        f"-- compatible-from: {NEWEST.version + 1:04d}\nSELECT 1;\n",
    )
    # What the next release ships: this release's migrations and one contract step.
    monkeypatch.setattr(migrate, "available", lambda: [*shipped, contract])
    assert [m.version for m in migrate.migrate(store_dsn)] == [contract.version]
    with psycopg.connect(store_dsn) as conn:
        row = conn.execute(
            "SELECT compatible_from FROM schema_migrations WHERE version = %s",
            (contract.version,),
        ).fetchone()
    assert row == (contract.version,)
    _check(store_dsn)  # the next release's own code runs against it
    monkeypatch.setattr(migrate, "available", lambda: shipped)
    with pytest.raises(errors.SchemaMismatchError, match="migrated by a newer Sundial"):
        _check(store_dsn)  # this release's does not
