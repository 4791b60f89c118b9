"""PostgreSQL fixtures for every tier that needs a database (a ``pytest_plugins`` module).

``postgres_server`` is a real PostgreSQL: the one named by ``SUNDIAL_TEST_DSN`` (a
superuser URL), or a throwaway server started from the machine's binaries for this
session. ``make_database`` hands each test its own fresh database so tests stay
isolated while locking and commits stay real.

``store_dsn`` is such a database with every migration applied: cloned (``CREATE DATABASE …
TEMPLATE``) from ``migrated_template``, so migrations run once per session rather than once
per test; ``pool`` is a store pool on it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from sundial.localdev import postgres
from sundial.store import migrate
from sundial.store import pool as store_pool


@dataclass(frozen=True)
class PostgresServer:
    """Where the session's PostgreSQL is; ``dsn_for(db)`` names a database on it."""

    admin_dsn: str

    def dsn_for(self, dbname: str) -> str:
        info = psycopg.conninfo.conninfo_to_dict(self.admin_dsn)
        info["dbname"] = dbname
        return psycopg.conninfo.make_conninfo(**info)  # type: ignore[arg-type]

    def create_database(self, name: str, *, template: str | None = None) -> str:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template:
                statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            conn.execute(statement)
        return self.dsn_for(name)

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    given = os.environ.get("SUNDIAL_TEST_DSN")
    if given:
        yield PostgresServer(admin_dsn=given)
        return
    server = postgres.ThrowawayPostgres()
    server.start()
    try:
        yield PostgresServer(admin_dsn=server.dsn)
    finally:
        server.stop()


@pytest.fixture
def make_database(postgres_server: PostgresServer) -> Iterator[Callable[..., str]]:
    """Create uniquely named databases (optionally from a template); drop them afterwards."""
    created: list[str] = []

    def create(*, template: str | None = None) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        created.append(name)
        return postgres_server.create_database(name, template=template)

    yield create
    for name in created:
        postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def migrated_template(postgres_server: PostgresServer) -> Iterator[str]:
    name = f"sundial_template_{uuid.uuid4().hex[:8]}"
    dsn = postgres_server.create_database(name)
    migrate.migrate(dsn)
    yield name
    postgres_server.drop_database(name)


@pytest.fixture
def store_dsn(make_database: Callable[..., str], migrated_template: str) -> str:
    return make_database(template=migrated_template)


@pytest.fixture
async def pool(store_dsn: str) -> AsyncIterator[store_pool.Pool]:
    opened = await store_pool.open_pool(store_dsn, min_size=1, max_size=4)
    try:
        yield opened
    finally:
        await opened.close()
