"""Fixtures for tests of real `sundial runner` processes against a real PostgreSQL: each test
gets its own migrated database (``dsn``, the ``store_dsn`` of support.databases), and every
runner it starts is killed when it ends."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from support.runner_loop import Runners


@pytest.fixture
def dsn(store_dsn: str) -> str:
    return store_dsn


@pytest.fixture
def runners(tmp_path: pathlib.Path) -> Iterator[Runners]:
    started = Runners(tmp_path)
    yield started
    for _ in started.close():
        pass
