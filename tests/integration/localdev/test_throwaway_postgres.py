"""The test bed itself: a real PostgreSQL we can create databases on and restart."""

from __future__ import annotations

from collections.abc import Callable

import psycopg


def test_fresh_databases_are_isolated(make_database: Callable[..., str]) -> None:
    first = make_database()
    second = make_database()
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE marker (id int)")
    with psycopg.connect(second, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('marker') IS NOT NULL").fetchone()
    assert found == (False,)
