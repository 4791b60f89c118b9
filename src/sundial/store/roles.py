"""Database roles per component: each part of Sundial connects with only the grants it needs.

The role that migrates owns the schema. ``sundial migrate`` then makes three group roles
(``NOLOGIN``; the names carry a prefix, ``sundial`` by default, because roles are shared by
every database of a PostgreSQL server) and grants them, again on every migrate so that a new
table is never left out:

============ ======================================= =========================================
role         who connects with it                    what it may do
============ ======================================= =========================================
``operator`` the operator, ``sundial scheduler``,    read and write every table; create and
             ``sundial pod-launcher``, a runner      drop history month partitions only
             with ``--maintenance``                  through two functions that run as the
                                                     owner (migration 0220)
``runner``   ``sundial runner`` (and the handler     claim, heartbeat, finish and submit runs;
             code in its process)                    announce itself and its circuits; read
                                                     jobs, schedules and history; delete no
                                                     run, change no job or schedule
``reader``   the run history API                     read every table, write none
============ ======================================= =========================================

None of them owns a table, so none can alter or drop the schema, and none may create objects
(``CREATE`` on the schema is not granted). A login for a component is a role that is a member
of its group role: ``create_login`` makes one (``sundial migrate --login COMPONENT=NAME``), or
a platform team grants the group role to a login of its own (docs/operations.md).

Grants are on tables, not columns or rows: a runner's role may update any run, as the claim and
the finish must; which runs a runner claims is the claim's ``namespace`` filter, not the
database's (docs/security.md says what that leaves to the platform team).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from sundial.store import errors

__all__ = [
    "COMPONENTS",
    "DEFAULT_PREFIX",
    "Grants",
    "RolesNotCreatedError",
    "create_login",
    "ensure",
    "role_name",
]

DEFAULT_PREFIX = "sundial"

_ALL = ("SELECT", "INSERT", "UPDATE", "DELETE")
_READ = ("SELECT",)


@dataclass(frozen=True)
class Grants:
    """What one component's group role may do."""

    #: Table -> privileges; ``"*"`` names every table of the schema not listed otherwise.
    tables: dict[str, tuple[str, ...]]
    #: May take numbers from the schema's sequences (run ids, attempt ids).
    sequences: bool
    #: Functions that run as the owner and that this role may call.
    owner_functions: tuple[str, ...] = ()


COMPONENTS: dict[str, Grants] = {
    "operator": Grants(
        tables={"*": _ALL, "schema_migrations": _READ},
        sequences=True,
        owner_functions=(
            "sundial_ensure_month_partition(timestamptz)",
            "sundial_drop_month_partition(text)",
            "sundial_quota_rows(text[])",
            "sundial_recount_quotas(text[], interval)",
            "sundial_count_active_runs()",
        ),
    ),
    "runner": Grants(
        tables={
            "*": _READ,
            "job_runs": ("SELECT", "INSERT", "UPDATE"),
            "job_run_deps": ("SELECT", "INSERT", "UPDATE"),
            "job_run_attempts": ("SELECT", "INSERT"),
            "idempotency_keys": ("SELECT", "INSERT"),
            "runners": _ALL,
            "circuits": _ALL,
        },
        sequences=True,
        # A finish records a failed attempt in this month's partition, making it if missing.
        owner_functions=("sundial_ensure_month_partition(timestamptz)",),
    ),
    "reader": Grants(tables={"*": _READ}, sequences=False),
}


class RolesNotCreatedError(errors.StoreError):
    """The migrating role may not create roles (no ``CREATEROLE``) and they do not exist yet.

    ``applied``: the migrations applied before the roles were tried, so a caller that treats
    this as a warning can still say what changed."""

    def __init__(self, message: str, applied: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.applied = list(applied)


def role_name(component: str, prefix: str = DEFAULT_PREFIX) -> str:
    if component not in COMPONENTS:
        known = ", ".join(COMPONENTS)
        raise ValueError(f"no database role for component {component!r}; known: {known}")
    return f"{prefix}_{component}"


def _tables(conn: psycopg.Connection[Any]) -> list[str]:
    """The ordinary and partitioned tables of the current schema (not partitions: access
    through the parent is checked on the parent only)."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c"
        " WHERE c.relnamespace = current_schema()::regnamespace"
        " AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname"
    ).fetchall()
    return [str(row[0]) for row in rows]


def _exists(conn: psycopg.Connection[Any], role: str) -> bool:
    row = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    return row is not None


def ensure(conn: psycopg.Connection[Any], prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Create the missing group roles and grant each exactly its privileges (idempotent:
    privileges a role should no longer have are revoked). Returns the roles created now.

    Raises ``RolesNotCreatedError``, changing nothing, when a role is missing and the connected
    role may not create it."""
    created: list[str] = []
    can_create = bool(
        conn.execute(
            "SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone()[0]  # type: ignore[index]
    )
    missing = [role_name(c, prefix) for c in COMPONENTS if not _exists(conn, role_name(c, prefix))]
    if missing and not can_create:
        raise RolesNotCreatedError(
            f"the database roles {', '.join(missing)} do not exist and the migrating role may "
            "not create them: create them once as a role with CREATEROLE "
            "(CREATE ROLE name NOLOGIN) and migrate again, or migrate with --no-roles"
        )
    tables = _tables(conn)
    for component, grants in COMPONENTS.items():
        role = role_name(component, prefix)
        if role in missing:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
            created.append(role)
        _grant(conn, role, grants, tables)
    return created


def _grant(conn: psycopg.Connection[Any], role: str, grants: Grants, tables: list[str]) -> None:
    who = sql.Identifier(role)
    for table in tables:
        privileges = grants.tables.get(table, grants.tables.get("*", ()))
        name = sql.Identifier(table)
        conn.execute(sql.SQL("REVOKE ALL ON TABLE {} FROM {}").format(name, who))
        if privileges:
            conn.execute(
                sql.SQL("GRANT {} ON TABLE {} TO {}").format(
                    sql.SQL(", ").join(sql.SQL(p) for p in privileges), name, who
                )
            )
    schema = sql.Identifier(_current_schema(conn))
    conn.execute(sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(schema, who))
    if grants.sequences:
        conn.execute(
            sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}").format(schema, who)
        )
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, who))
    for function in COMPONENTS_OWNER_FUNCTIONS:
        verb = "GRANT" if function in grants.owner_functions else "REVOKE"
        preposition = "TO" if verb == "GRANT" else "FROM"
        conn.execute(
            sql.SQL("{} EXECUTE ON FUNCTION {} {} {}").format(
                sql.SQL(verb), sql.SQL(function), sql.SQL(preposition), who
            )
        )


def _current_schema(conn: psycopg.Connection[Any]) -> str:
    return str(conn.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index]


#: Every function that runs as the owner, whoever may call it.
COMPONENTS_OWNER_FUNCTIONS = tuple(
    sorted({f for grants in COMPONENTS.values() for f in grants.owner_functions})
)


def create_login(
    conn: psycopg.Connection[Any],
    component: str,
    login: str,
    password: str,
    prefix: str = DEFAULT_PREFIX,
) -> bool:
    """Make ``login`` a role that can log in with ``password`` and holds ``component``'s
    grants, and nothing more; returns whether it was created now (else its password is set
    again). The password goes to the server as a parameter-free literal but never into an
    error: psycopg's messages quote the statement only on syntax errors, which a quoted
    literal cannot cause."""
    group = role_name(component, prefix)
    if login in {role_name(c, prefix) for c in COMPONENTS}:
        raise ValueError(f"a login cannot be the group role {login!r} itself; name another")
    created = not _exists(conn, login)
    verb = "CREATE" if created else "ALTER"
    conn.execute(
        sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
            sql.SQL(verb), sql.Identifier(login), sql.Literal(password)
        )
    )
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(login)))
    return created
