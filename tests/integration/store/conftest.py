"""Fixtures for run-store tests: every test gets its own database cloned from a migrated
template (``CREATE DATABASE … TEMPLATE``), so tests are isolated, commits and row locks are
real, and migrations run once per session rather than once per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from store_testing import create_job

from sundial.store import migrate
from sundial.store import pool as store_pool


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


@pytest.fixture
def job(store_dsn: str) -> uuid.UUID:
    return create_job(store_dsn)


@pytest.fixture
def make_job(store_dsn: str) -> Callable[..., uuid.UUID]:
    """``make_job(name, **columns)`` inserts a job definition into this test's database."""

    def make(name: str = "job", **overrides: Any) -> uuid.UUID:
        return create_job(store_dsn, name, **overrides)

    return make
