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

Grants are on tables, not columns: a runner's role may update runs, as the claim and the
finish must. Rows are the business of ``keep_to_namespaces`` (``sundial migrate
--login-namespaces LOGIN=NS,...``): a login it lists sees and writes only the runs of those
namespaces (row-level security, migration 0300), so one team's handler code, which runs with
its runner's connection, cannot read or change another team's runs. A login not listed is kept
to nothing.
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
    "keep_to_namespaces",
    "role_name",
]

DEFAULT_PREFIX = "sundial"

_ALL = ("SELECT", "INSERT", "UPDATE", "DELETE")
_READ = ("SELECT",)

#: Whoever ends a run releases or fails the runs waiting on it, in any namespace: these run as
#: the owner and act only on the caller's own runs (migration 0300).
_ENDING_RUNS = (
    "sundial_release_dependents(bigint[])",
    "sundial_fail_dependents(bigint[], text[])",
)


#: Tables no component may touch, whatever its ``"*"`` says: which namespaces a login is kept
#: to is written by the owner and read through ``sundial_login_namespaces()`` alone, so a kept
#: login can neither widen its list nor read another team's.
_OWNER_ONLY_TABLES = frozenset({"login_namespaces"})


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
            *_ENDING_RUNS,
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
            "hot_queue_epochs": ("SELECT", "INSERT"),
            # The relay takes entries off the outbox (its triggers write them as the owner).
            "hot_queue_outbox": ("SELECT", "DELETE"),
        },
        sequences=True,
        # A finish records a failed attempt in this month's partition, making it if missing.
        owner_functions=("sundial_ensure_month_partition(timestamptz)", *_ENDING_RUNS),
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
        privileges = (
            ()
            if table in _OWNER_ONLY_TABLES
            else grants.tables.get(table, grants.tables.get("*", ()))
        )
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


def keep_to_namespaces(
    conn: psycopg.Connection[Any],
    login: str,
    namespaces: Sequence[str] | None,
    prefix: str = DEFAULT_PREFIX,
) -> None:
    """Keep ``login`` to the runs of ``namespaces`` (``None``: lift it, the login sees every
    namespace). Only the owner may: the table has no grant for any component. The login need
    not exist yet, so the list can be written before a platform team makes the login. Refused:
    a role that cannot log in (the policies name the session's login), and a login of the
    operator's group, which acts for every namespace (the trigger, the reaper, the mirror). A
    reader's login may be kept: a team's own history reader then sees only its runs."""
    row = conn.execute(
        "SELECT r.rolcanlogin, o.oid IS NOT NULL AND pg_has_role(r.oid, o.oid, 'MEMBER')"
        " FROM pg_roles r LEFT JOIN pg_roles o ON o.rolname = %s WHERE r.rolname = %s",
        (role_name("operator", prefix), login),
    ).fetchone()
    if namespaces is not None and row is not None and not row[0]:
        raise ValueError(
            f"{login!r} is a group role (it cannot log in): keep the login that connects to"
            " namespaces, not its group"
        )
    if namespaces is not None and row is not None and row[1]:
        raise ValueError(
            f"{login!r} has the operator's grants, and the operator acts for every namespace:"
            " keep a runner's login to namespaces, not the operator's"
        )
    if namespaces is None:
        conn.execute("DELETE FROM login_namespaces WHERE login = %s", (login,))
        return
    conn.execute(
        "INSERT INTO login_namespaces (login, namespaces) VALUES (%s, %s)"
        " ON CONFLICT (login) DO UPDATE SET namespaces = excluded.namespaces",
        (login, sorted(set(namespaces))),
    )
