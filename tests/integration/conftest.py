"""Fixtures shared by the integration tiers: a throwaway Redis for the hot queue's tests (the
store's, the runner's), started once per session and only if a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sundial.localdev.redis_server import ThrowawayRedis, throwaway_redis


@pytest.fixture(scope="session")
def redis_server() -> Iterator[ThrowawayRedis]:
    """One throwaway Redis for the hot queue's tests (a test that kills its Redis starts its
    own). Tests empty it before use."""
    with throwaway_redis() as started:
        yield started
