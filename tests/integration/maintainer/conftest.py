"""Fixtures for maintainer tests: a fresh database per test, cloned from a migrated template
(the same scheme as the store's tests), and one job definition to hang runs on."""

from __future__ import annotations

import uuid

import pytest

from support.store import create_job


@pytest.fixture
def job(store_dsn: str) -> uuid.UUID:
    return create_job(store_dsn)
