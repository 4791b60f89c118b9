"""A migration that older code cannot run against says so in one line, which is checked as the
migrations are listed, before any is applied."""

from __future__ import annotations

import pytest

from sundial.store import errors, migrate


def test_a_migration_without_a_marker_is_forward_compatible() -> None:
    assert (
        migrate.Migration(300, "add_a_column", "ALTER TABLE t ADD COLUMN c int;").compatible_from
        is None
    )


def test_the_marker_names_the_oldest_migration_code_must_know() -> None:
    sql = "-- Drops a column the previous release reads.\n-- compatible-from: 0290\nSELECT 1;\n"
    assert migrate.Migration(300, "drop_a_column", sql).compatible_from == 290


def test_a_marker_naming_a_later_migration_is_refused() -> None:
    with pytest.raises(errors.MigrationError, match="a later migration"):
        _ = migrate.Migration(300, "bad", "-- compatible-from: 0310\nSELECT 1;").compatible_from


def test_two_markers_are_refused() -> None:
    sql = "-- compatible-from: 0290\n-- compatible-from: 0300\nSELECT 1;"
    with pytest.raises(errors.MigrationError, match="keep one"):
        _ = migrate.Migration(300, "bad", sql).compatible_from
