"""Which code runs against which schema: every daemon checks once, when it starts.

A release's code knows the migrations it ships; the newest is the schema it needs. Against a
database that lacks one of them (a new image started before ``sundial migrate`` ran) a process
would fail later on a missing column or function, in the middle of a run; it refuses to start
instead, with the command that fixes it.

Newer schemas are the upgrade's normal state for a while: the chart's migrate hook applies the
new release's migrations while the old release's runners are still serving. Migrations are
therefore forward-compatible (they add; they do not drop or change what the previous release
uses), and older code keeps running against them. A migration that cannot be, a contract step
a later release makes once no older process is left, carries ``-- compatible-from: NNNN``:
code that does not know migration NNNN refuses to start against it, instead of writing what
the new schema no longer means. ``schema_migrations.compatible_from`` keeps the marker, so
that code written before the migration can read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sundial.store import errors, migrate, pool, queries

__all__ = ["SchemaState", "open_compatible_pool", "read", "require_compatible"]


@dataclass(frozen=True)
class SchemaState:
    #: The newest migration applied (``None``: never migrated).
    applied: int | None
    #: The oldest migration code must know to run against it (``None``: any code that has
    #: its own migrations applied).
    compatible_from: int | None


async def read(store: pool.Pool) -> SchemaState:
    async with store.connection() as conn:
        found = await (await conn.execute(queries.get("schema_migrations_exist"))).fetchone()
        if not found or not found[0]:
            return SchemaState(None, None)
        row = await (await conn.execute(queries.get("schema_state"))).fetchone()
    assert row is not None
    return SchemaState(row[0], row[1])


def _name(version: int) -> str:
    for migration in migrate.available():
        if migration.version == version:
            return f"{version:04d}_{migration.name}"
    return f"{version:04d}"


async def require_compatible(store: pool.Pool, component: str) -> None:
    """Return if this code may run against the database's schema; raise
    ``SchemaMismatchError`` saying what to do otherwise. ``component`` names the process in
    the message ("runner", "operator", ...)."""
    needed = migrate.available()[-1].version
    state = await read(store)
    if state.applied is None:
        raise errors.SchemaMismatchError(
            f"the database has no Sundial schema yet; this {component} needs migration "
            f"{_name(needed)}: run `sundial migrate` against it (the chart's migrate hook does so "
            "on install and upgrade), then start the "
            f"{component} again"
        )
    if state.applied < needed:
        raise errors.SchemaMismatchError(
            f"the database schema is at migration {state.applied:04d}, and this {component} "
            f"needs {_name(needed)}: run `sundial migrate` of this release first (the chart's "
            f"migrate hook does so on install and upgrade), then start the {component} again"
        )
    if state.compatible_from is not None and state.compatible_from > needed:
        raise errors.SchemaMismatchError(
            f"the database schema was migrated by a newer Sundial to migration "
            f"{state.applied:04d}, which code older than its migration "
            f"{state.compatible_from:04d} cannot use, and this {component} knows migrations up "
            f"to {_name(needed)} only: run this {component} from the release that migrated the "
            "database (a rollback needs the database restored from before that upgrade)"
        )


async def open_compatible_pool(
    dsn: str, component: str, *, min_size: int = 1, max_size: int = 4, name: str = "sundial"
) -> pool.Pool:
    """A pool on ``dsn``, once ``require_compatible`` passed; closed again if it raised (or
    the check could not be made), so a daemon that does not start leaves no connection."""
    opened = await pool.open_pool(dsn, min_size=min_size, max_size=max_size, name=name)
    try:
        await require_compatible(opened, component)
    except BaseException:
        await opened.close()
        raise
    return opened
