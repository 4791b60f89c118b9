"""Schema migrations: numbered SQL files applied once each, in order, under an advisory lock.

``migrations/NNNN_name.sql`` files are how every database gets its schema; there is no
separate "fresh install" path, so a fresh install and an upgraded database run the same
statements. ``schema/`` is the reference: the current schema, each SQL function defined once
(``schema/functions/<name>.sql``) and the tables by topic (``schema/tables/NN_topic.sql``); it
is never applied to a real installation. ``build_reference`` builds a database from it, and a
test requires that database to equal one built from every migration (see ``sundial.store``'s
docstring for how to change the schema).

Each migration runs in its own transaction together with its row in ``schema_migrations``; a
checksum catches a file edited after it was applied. Two processes migrating at once serialise
on a session advisory lock, so `sundial migrate` is safe to run from every replica's init
container.

A migration runs while the previous release's processes serve (a rolling upgrade), so it waits
for its table locks a bounded time (``LOCK_TIMEOUT_MS``: while it waits for an exclusive lock,
every runner's write to that table queues behind it) and is tried again, whole, when that time
runs out or PostgreSQL picks it as a deadlock's victim (a runner that read a table and then
writes it, beside a migration that took a share lock and then wants an exclusive one). Its
transaction rolled back, so trying again is safe; ``patience_seconds`` bounds the tries.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg

from sundial.store import errors, pool, roles

__all__ = [
    "ADVISORY_LOCK_KEY",
    "LOCK_TIMEOUT_MS",
    "Migration",
    "applied_versions",
    "available",
    "build_reference",
    "migrate",
    "reference_files",
]

# An arbitrary constant ("sundial" in ASCII) so our lock does not collide with other apps'.
ADVISORY_LOCK_KEY = 0x73756E6469616C

#: How long one try of a migration waits for a lock before it rolls back and tries again: the
#: longest a rolling upgrade's runners wait behind it for one table.
LOCK_TIMEOUT_MS = 2000
#: How long ``migrate`` keeps trying one migration whose locks are busy, by default.
PATIENCE_SECONDS = 300.0
#: The errors after which a migration is tried again: its transaction rolled back whole.
_LOCK_BUSY = (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected)

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
#: A migration that older code cannot run against (a contract step: a column, table or function
#: that earlier releases use is dropped or changed) says from which migration on the code works.
_COMPATIBLE_FROM = re.compile(r"^-- compatible-from: (\d{4})\s*$", re.MULTILINE)

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
# Added after the first releases, so a database migrated by one of them gains it here.
_ADD_COMPATIBLE_FROM = (
    "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from integer"
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def compatible_from(self) -> int | None:
        """The oldest migration the code must know to run against a schema with this one
        applied; ``None`` for a forward-compatible migration (the usual case: it only adds), so
        processes of the previous release keep working while it is applied under them."""
        found = _COMPATIBLE_FROM.findall(self.sql)
        if not found:
            return None
        if len(found) > 1:
            raise errors.MigrationError(
                f"migration {self.version:04d}_{self.name}.sql has {len(found)} "
                "'-- compatible-from:' lines: keep one"
            )
        version = int(found[0])
        if version > self.version:
            raise errors.MigrationError(
                f"migration {self.version:04d}_{self.name}.sql says '-- compatible-from: "
                f"{version:04d}', a later migration: name this one or an earlier one"
            )
        return version


#: Migrations whose comments (never their statements) were reworded after release: a database
#: that applied the earlier text recorded this checksum, which is accepted as well.
REWORDED: dict[int, str] = {
    50: "21dcedd8d9872b73cd621c762ab267535e5519b7214ca8651bc1607385789855",
    60: "f9296ea5f7e8ef795f416171ab6ed55b1c3066b13e55f796c1ac064180e04617",
    170: "b5e3a9cb0dff82a78158eb2d3e784c07d59dfdcb6f9fba5ba04e6deeb1b7dc2f",
    190: "7abc034877df88e3622fc7b23d3824e86785680b94d5bf353d3faca3bb991826",
}


def available() -> list[Migration]:
    """Every migration shipped in the package, in version order."""
    folder = resources.files("sundial.store").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise errors.MigrationError(f"two migration files share a version number: {versions}")
    for migration in found:
        migration.compatible_from  # noqa: B018 - a malformed marker fails here, before any run
    return found


@contextlib.contextmanager
def _connect(
    dsn: str, *, autocommit: bool = False
) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """A connection whose psycopg errors leave as store errors (the store's edge, as in
    ``pool.Pool``); a failed migration is reported as ``MigrationError`` before that."""
    try:
        with psycopg.connect(dsn, autocommit=autocommit) as conn:
            yield conn
    except psycopg.Error as error:
        raise pool.store_error(error) from error


def applied_versions(dsn: str) -> list[int]:
    with _connect(dsn) as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return []
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        return [row[0] for row in rows]


def migrate(
    dsn: str,
    *,
    target: int | None = None,
    grant_roles: bool = False,
    role_prefix: str = roles.DEFAULT_PREFIX,
    logins: Mapping[str, tuple[str, str]] | None = None,
    kept_to_namespaces: Mapping[str, Sequence[str] | None] | None = None,
    patience_seconds: float = PATIENCE_SECONDS,
) -> list[Migration]:
    """Apply every migration not yet applied (up to ``target``); return those applied now.

    ``grant_roles``: then make the components' database roles and their grants
    (``store/roles.py``), and the ``logins`` given as component -> (login, password). Raises
    ``roles.RolesNotCreatedError`` after the migrations when the roles cannot be made; its
    ``applied`` lists the migrations applied first. ``kept_to_namespaces``: login ->
    the namespaces it is kept to (``None`` lifts it), see ``roles.keep_to_namespaces``."""
    applied_now: list[Migration] = []
    with _connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
        try:
            conn.execute(_CREATE_TABLE)
            conn.execute(_ADD_COMPATIBLE_FROM)
            done = {
                row[0]: row[1]
                for row in conn.execute("SELECT version, checksum FROM schema_migrations")
            }
            for migration in available():
                if target is not None and migration.version > target:
                    break
                if migration.version in done:
                    recorded = done[migration.version]
                    if recorded not in (migration.checksum, REWORDED.get(migration.version)):
                        raise errors.MigrationError(
                            f"migration {migration.version:04d}_{migration.name}.sql changed "
                            "after it was applied: never edit an applied migration, add a new one"
                        )
                    continue
                _apply(conn, migration, patience_seconds)
                applied_now.append(migration)
            if grant_roles or logins:
                try:
                    with conn.transaction():
                        roles.ensure(conn, role_prefix)
                        for component, (login, password) in (logins or {}).items():
                            roles.create_login(conn, component, login, password, role_prefix)
                except roles.RolesNotCreatedError as error:
                    raise roles.RolesNotCreatedError(str(error), applied_now) from None
            if kept_to_namespaces:
                with conn.transaction():
                    for login, namespaces in kept_to_namespaces.items():
                        roles.keep_to_namespaces(conn, login, namespaces, role_prefix)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))
    return applied_now


def _apply(
    conn: psycopg.Connection[tuple[Any, ...]], migration: Migration, patience_seconds: float
) -> None:
    """Run ``migration`` and record it in one transaction, tried again while its locks are
    busy; raise ``MigrationError`` naming the file on any other failure or out of patience."""
    name = f"{migration.version:04d}_{migration.name}.sql"
    deadline = time.monotonic() + patience_seconds
    tries = 0
    while True:
        tries += 1
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}")
                conn.execute(migration.sql.encode())
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum, compatible_from) "
                    "VALUES (%s, %s, %s, %s)",
                    (migration.version, migration.name, migration.checksum,
                     migration.compatible_from),
                )  # fmt: skip
            return
        except _LOCK_BUSY as error:
            if time.monotonic() >= deadline:
                raise errors.MigrationError(
                    f"migration {name} could not take its locks in {tries} tries over "
                    f"{patience_seconds:g} s ({type(error).__name__}: "
                    f"{str(error).splitlines()[0]}): a long transaction holds a table it "
                    "changes; end it (pg_stat_activity names it) and run `sundial migrate` "
                    "again"
                ) from error
            # A short pause, jittered so two busy tries do not meet the same runner again.
            time.sleep(min(0.2 * tries, 2.0) * random.uniform(0.5, 1.0))
        except psycopg.Error as error:
            raise errors.MigrationError(f"migration {name} failed: {error}") from error


def reference_files() -> list[tuple[str, str]]:
    """``schema/``'s files as (path under ``store/``, SQL): functions, then tables by topic."""
    schema = resources.files("sundial.store").joinpath("schema")
    found = []
    for folder in ("functions", "tables"):
        for entry in sorted(schema.joinpath(folder).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".sql"):
                found.append((f"schema/{folder}/{entry.name}", entry.read_text("utf-8")))
    return found


def build_reference(dsn: str) -> None:
    """Create ``schema/``'s objects in the empty database ``dsn`` (for the test that ties
    ``schema/`` to the migrations; an installation is always migrated)."""
    with _connect(dsn, autocommit=True) as conn, conn.transaction():
        # Functions come first and may name tables created after them.
        conn.execute("SET LOCAL check_function_bodies = off")
        for path, sql in reference_files():
            try:
                conn.execute(sql.encode())
            except psycopg.Error as error:
                raise errors.MigrationError(f"{path} failed: {error}") from error
