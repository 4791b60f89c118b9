"""Helpers shared by the run-store tests (imported by their conftest and by tests)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


def create_job(dsn: str, name: str = "job", **overrides: Any) -> uuid.UUID:
    """Insert a job definition as the operator would; returns its id."""
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "namespace": "default",
        "name": name,
        "handler": f"handlers.{name}",
        "queue": "default",
        "priority": 1,
        "timeout_seconds": 60,
        "max_retries": 3,
        "backoff_base_seconds": 0.0,
        "backoff_cap_seconds": 0.0,
        **overrides,
    }
    if isinstance(values.get("pod_template"), dict):
        values["pod_template"] = Jsonb(values["pod_template"])
    columns = ", ".join(values)
    placeholders = ", ".join(f"%({key})s" for key in values)
    with psycopg.connect(dsn) as conn:
        conn.execute(
            f"INSERT INTO job_definitions ({columns}) VALUES ({placeholders})",  # type: ignore[arg-type]
            values,
        )
    return values["id"]  # type: ignore[no-any-return]


def record_newer_migration(dsn: str, version: int, *, compatible_from: int | None) -> None:
    """What a later release's ``sundial migrate`` leaves: the row of a migration this code does
    not ship, marked (or not) as one earlier code cannot run against."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum, compatible_from) "
            "VALUES (%s, 'from_a_later_release', 'x', %s)",
            (version, compatible_from),
        )
