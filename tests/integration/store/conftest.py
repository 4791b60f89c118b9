"""Fixtures for run-store tests: every test gets its own database cloned from a migrated
template (``CREATE DATABASE … TEMPLATE``), so tests are isolated, commits and row locks are
real, and migrations run once per session rather than once per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from sundial.store import migrate, pool as store_pool


@pytest.fixture(scope="session")
def migrated_template(postgres_server: Any) -> Iterator[str]:
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


def create_job(dsn: str, name: str = "job", **overrides: Any) -> uuid.UUID:
    """Insert a job definition as the operator would; returns its id."""
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "namespace": "default",
        "name": name,
        "handler": f"handlers.{name}",
        "queue": "default",
        "priority": 1,
        "timeout_seconds": 60,
        "max_retries": 3,
        "backoff_base_seconds": 0.0,
        "backoff_cap_seconds": 0.0,
        **overrides,
    }
    if isinstance(values.get("pod_template"), dict):
        values["pod_template"] = Jsonb(values["pod_template"])
    columns = ", ".join(values)
    placeholders = ", ".join(f"%({key})s" for key in values)
    with psycopg.connect(dsn) as conn:
        conn.execute(
            f"INSERT INTO job_definitions ({columns}) VALUES ({placeholders})",  # type: ignore[arg-type]
            values,
        )
    return values["id"]  # type: ignore[no-any-return]


@pytest.fixture
def job(store_dsn: str) -> uuid.UUID:
    return create_job(store_dsn)


@pytest.fixture
def make_job(store_dsn: str) -> Callable[..., uuid.UUID]:
    """``make_job(name, **columns)`` inserts a job definition into this test's database."""

    def make(name: str = "job", **overrides: Any) -> uuid.UUID:
        return create_job(store_dsn, name, **overrides)

    return make
