"""Fixtures for tests of real `sundial runner` processes against a real PostgreSQL: each test
gets its own database cloned from a migrated template, and every runner it starts is killed
when it ends."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from runner_loop_testing import Runners

from sundial.store import migrate


@pytest.fixture(scope="session")
def runner_loop_template(postgres_server: Any) -> Iterator[str]:
    name = f"sundial_runloop_{uuid.uuid4().hex[:8]}"
    dsn = postgres_server.create_database(name)
    migrate.migrate(dsn)
    yield name
    postgres_server.drop_database(name)


@pytest.fixture
def dsn(make_database: Callable[..., str], runner_loop_template: str) -> str:
    return make_database(template=runner_loop_template)


@pytest.fixture
def runners(tmp_path: pathlib.Path) -> Iterator[Runners]:
    started = Runners(tmp_path)
    yield started
    for _ in started.close():
        pass
