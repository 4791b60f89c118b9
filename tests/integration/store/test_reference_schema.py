"""``store/schema/`` is the schema the migrations build, object for object.

Two databases: one migrated, one built from ``schema/`` (``migrate.build_reference``). Each
is dumped with ``pg_dump --schema-only`` and split into its objects (pg_dump heads each with
``-- Name: …; Type: …``), so tables, columns, constraints, indexes, triggers, views and every
function's full definition are compared, and a difference names the object and the file to fix.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from collections.abc import Callable

from sundial.localdev import postgres
from sundial.store import migrate

_HEADER = re.compile(r"^--\n-- Name: (.*?); Type: (.*?); Schema: public; Owner: -\n--\n", re.M)
_FUNCTION_NAME = re.compile(r"(sundial_\w+)\(")
_LAST_CHANGED = re.compile(r"^-- Current definition; last changed by migrations/(\S+)\.$", re.M)
_IGNORED = {"schema_migrations"}  # created by migrate.py itself, not by a migration


def objects(dsn: str) -> dict[str, str]:
    """``"TYPE name"`` -> its DDL as pg_dump prints it."""
    pg_dump = postgres.find_postgres_bin_dir() / "pg_dump"
    dump = subprocess.run(
        [str(pg_dump), "--schema-only", "--no-owner", "--no-privileges", "--dbname", dsn],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    parts = _HEADER.split(dump)
    found = {}
    for name, kind, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if name.split()[0] in _IGNORED:
            continue
        lines = [line for line in body.splitlines() if line and not line.startswith(("SET ", "\\"))]
        found[f"{kind} {name}"] = "\n".join(lines)
    return found


def schema_file_for(key: str, ddl: str) -> str:
    """The file of ``schema/`` that should hold the object ``key`` (whose DDL is ``ddl``)."""
    function = _FUNCTION_NAME.search(key)
    if key.startswith("FUNCTION") and function:
        return f"src/sundial/store/schema/functions/{function[1]}.sql"
    # The object's table: named first in its pg_dump name, or after ON / TABLE in its DDL.
    tables = [key.split(" ", 2)[1], *re.findall(r"(?:ON|TABLE|FROM) (?:ONLY )?public\.(\w+)", ddl)]
    for path, sql in migrate.reference_files():
        if any(re.search(rf"CREATE (?:TABLE|VIEW) {re.escape(t)}\b", sql) for t in tables):
            return f"src/sundial/store/{path}"
    return "src/sundial/store/schema/tables/ (the file of its table's topic)"


def explain(migrated: dict[str, str], reference: dict[str, str]) -> str:
    problems = []
    for key in sorted(migrated.keys() - reference.keys()):
        problems.append(
            f"{key} is created by the migrations but missing from schema/: add it to"
            f" {schema_file_for(key, migrated[key])}:\n{migrated[key]}"
        )
    for key in sorted(reference.keys() - migrated.keys()):
        problems.append(
            f"{key} is in schema/ but no migration creates it: add a migration"
            f" (src/sundial/store/migrations/NNNN_name.sql) or remove it from"
            f" {schema_file_for(key, reference[key])}"
        )
    for key in sorted(migrated.keys() & reference.keys()):
        if migrated[key] != reference[key]:
            diff = "\n".join(
                difflib.unified_diff(
                    reference[key].splitlines(),
                    migrated[key].splitlines(),
                    "schema/",
                    "migrations",
                    lineterm="",
                )
            )
            where = schema_file_for(key, migrated[key])
            problems.append(
                f"{key} differs. If a migration changed it, copy the migration's statement into"
                f" {where} (and its 'last changed by' line); if you edited that file, add a"
                f" migration that makes the same change.\n{diff}"
            )
    return "\n\n".join(problems)


def test_schema_folder_equals_the_migrations(make_database: Callable[..., str]) -> None:
    migrated_dsn = make_database()
    reference_dsn = make_database()
    migrate.migrate(migrated_dsn)
    migrate.build_reference(reference_dsn)
    migrated, reference = objects(migrated_dsn), objects(reference_dsn)
    assert "TABLE job_runs" in migrated and any(k.startswith("FUNCTION") for k in migrated)
    problems = explain(migrated, reference)
    assert not problems, "store/schema/ and the migrations disagree:\n\n" + problems


def test_each_function_file_names_the_migration_that_last_changed_it() -> None:
    """The 'last changed by' line of schema/functions/<f>.sql names the newest migration that
    creates or replaces <f>, so a reader knows where the definition came from."""
    creates: dict[str, str] = {}
    for migration in migrate.available():
        for name in re.findall(r"CREATE (?:OR REPLACE )?FUNCTION (sundial_\w+)\(", migration.sql):
            creates[name] = f"{migration.version:04d}_{migration.name}.sql"
    wrong = {}
    for path, sql in migrate.reference_files():
        if path.startswith("schema/functions/"):
            name = path.rsplit("/", 1)[1].removesuffix(".sql")
            named = _LAST_CHANGED.search(sql)
            if named is None or named[1] != creates.get(name):
                wrong[path] = creates.get(name)
    assert wrong == {}, f"set the 'last changed by' line to these migrations: {wrong}"
