"""Fixtures for trigger-loop tests: a fresh database per test, cloned from a migrated template
(the same scheme as the store's tests), and a ManualClock so minutes of schedule take no
time."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from trigger_testing import START

from sundial.scheduling import clock
from sundial.store import migrate
from sundial.store import pool as store_pool


@pytest.fixture(scope="session")
def trigger_template(postgres_server: Any) -> Iterator[str]:
    name = f"sundial_trigger_template_{uuid.uuid4().hex[:8]}"
    dsn = postgres_server.create_database(name)
    migrate.migrate(dsn)
    yield name
    postgres_server.drop_database(name)


@pytest.fixture
def store_dsn(make_database: Callable[..., str], trigger_template: str) -> str:
    return make_database(template=trigger_template)


@pytest.fixture
async def pool(store_dsn: str) -> AsyncIterator[store_pool.Pool]:
    opened = await store_pool.open_pool(store_dsn, min_size=1, max_size=4)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def manual_clock() -> clock.ManualClock:
    return clock.ManualClock(START)
