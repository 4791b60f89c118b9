"""Fixtures for run-store tests: every test gets its own database cloned from a migrated
template (``CREATE DATABASE … TEMPLATE``), so tests are isolated, commits and row locks are
real, and migrations run once per session rather than once per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from sundial.localdev.redis_server import ThrowawayRedis
from support.store import create_job


@pytest.fixture
def job(store_dsn: str) -> uuid.UUID:
    return create_job(store_dsn)


@pytest.fixture
def make_job(store_dsn: str) -> Callable[..., uuid.UUID]:
    """``make_job(name, **columns)`` inserts a job definition into this test's database."""

    def make(name: str = "job", **overrides: Any) -> uuid.UUID:
        return create_job(store_dsn, name, **overrides)

    return make


@pytest.fixture
async def client(redis_server: ThrowawayRedis) -> AsyncIterator[aioredis.Redis]:
    """A connection to ``redis_server``, emptied for this test."""
    connection = aioredis.Redis.from_url(redis_server.url)
    await connection.flushall()
    yield connection
    await connection.aclose()
