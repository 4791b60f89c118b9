"""`sundial migrate` as a subprocess, and dropping the roles a test made (roles belong to the
server, not to the test's database)."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
from psycopg import sql


def sundial_migrate(
    dsn: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sundial", "migrate", "--dsn", dsn, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def drop_roles(admin_dsn: str, database_dsn: str, names: list[str]) -> None:
    """Roles belong to the server: revoke what they hold in the test's database, then drop."""
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        for name in names:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def login_dsn(dsn: str, login: str, password: str) -> str:
    """``dsn`` with another user and password."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return psycopg.conninfo.make_conninfo(**{**info, "user": login, "password": password})  # type: ignore[arg-type]
