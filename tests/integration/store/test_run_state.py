"""``RunState`` and its sets say what the database's CHECK constraints say.

Read from a migrated PostgreSQL (``pg_constraint``), not from the migration files, so a
migration that adds or renames a state without updating ``sundial.scheduling.run_state``
fails here, and the other way round.
"""

from __future__ import annotations

import re

import psycopg

from sundial.scheduling import run_state
from sundial.scheduling.run_state import RunState
from sundial.store import queries

_QUOTED = re.compile(r"'([a-z_]+)'::text")


def check_constraints(dsn: str, table: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = %s::regclass AND contype = 'c' ORDER BY conname",
            (table,),
        ).fetchall()
    return [row[0] for row in rows]


def states_in(definition: str) -> set[str]:
    return set(_QUOTED.findall(definition))


def test_run_state_equals_the_state_check_of_job_runs(store_dsn: str) -> None:
    checks = check_constraints(store_dsn, "job_runs")
    allowed = [d for d in checks if d.startswith("CHECK ((state = ANY")]
    assert len(allowed) == 1, checks
    assert states_in(allowed[0]) == {state.value for state in RunState}


def test_finished_is_what_sets_finished_at(store_dsn: str) -> None:
    checks = check_constraints(store_dsn, "job_runs")
    finished = [d for d in checks if "finished_at IS NOT NULL" in d]
    assert len(finished) == 1, checks
    assert states_in(finished[0]) == {state.value for state in run_state.FINISHED}


def test_finished_runs_hold_only_finished_states(store_dsn: str) -> None:
    (archived,) = check_constraints(store_dsn, "finished_runs")
    assert states_in(archived) == {state.value for state in run_state.FINISHED}


def test_replay_accepts_exactly_the_failed_set(store_dsn: str) -> None:
    """replay.sql's WHERE names FAILED: what `sundial runs replay` may put back."""
    where = queries.get("replay").split("WHERE", 1)[1]
    assert set(re.findall(r"'([a-z_]+)'", where)) == {s.value for s in run_state.FAILED}


def test_the_sets_partition_the_states() -> None:
    assert set(RunState) == run_state.ACTIVE | run_state.FINISHED
    assert not run_state.ACTIVE & run_state.FINISHED
    assert run_state.FAILED < run_state.FINISHED
    assert "completed" in run_state.FINISHED  # a state read from the database is a str
