"""An open circuit breaker makes runs wait (RetryWait) without spending their retries, and the
runner tells /metrics and PostgreSQL (the circuits table) about it."""

from __future__ import annotations

import psycopg

from support.runner_loop import Runners, create_job, eventually, states, submit

WRITE_COUNTER = """
CREATE TABLE circuit_writes (n bigserial PRIMARY KEY, state text NOT NULL);
CREATE FUNCTION count_circuit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO circuit_writes (state) VALUES (NEW.state); RETURN NEW; END $$;
CREATE TRIGGER count_circuit_writes AFTER INSERT OR UPDATE ON circuits
    FOR EACH ROW EXECUTE FUNCTION count_circuit_write();
"""


def test_runs_wait_without_spending_retries_once_the_breaker_opens(
    dsn: str, runners: Runners
) -> None:
    with psycopg.connect(dsn) as conn:  # counts every write the runner makes to `circuits`
        conn.execute(WRITE_COUNTER)
    runner = runners.start(dsn, "--concurrency", "async=1")
    job = create_job(dsn, "loop.flaky_downstream", max_retries=0)
    submit(dsn, job, 15)

    # The default policy opens after 10 calls with a failure rate >= 50%.
    eventually(
        lambda: states(dsn) == {"dead_lettered": 10, "retry_wait": 5}, what="the breaker to open"
    )
    with psycopg.connect(dsn) as conn:
        waiting = conn.execute(
            "SELECT retries_used, last_error, run_at > now() + interval '20 seconds'"
            " FROM job_runs WHERE state = 'retry_wait'"
        ).fetchall()
    assert {(used, error, later) for used, error, later in waiting} == {
        (0, "circuit breaker for dependency 'flaky-api' is open", True)
    }
    labels = {"dependency": "flaky-api"}
    assert runner.metric("sundial_circuit_state", **labels, sundial_circuit_state="open") == 1
    assert runner.metric("sundial_circuit_state", **labels, sundial_circuit_state="closed") == 0

    # Shared: the transition is in PostgreSQL, once per state, not once per job.
    def published() -> list[tuple[str, str, str]]:
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT worker_id, dependency, state FROM circuits").fetchall()
        return [tuple(row) for row in rows]

    eventually(lambda: published() == [(runner.worker_id, "flaky-api", "open")], what="publish")
    with psycopg.connect(dsn) as conn:
        writes = [row[0] for row in conn.execute("SELECT state FROM circuit_writes ORDER BY n")]
    # Created closed, then opened; a refresh (every 30 s) may have written it once more.
    assert writes[:2] == ["closed", "open"] and writes[2:] in ([], ["open"])

    # A clean stop takes the runner's rows away with its announcement.
    assert runner.terminate_and_wait() == 0
    assert published() == []


def test_the_dependency_a_job_names_keys_the_breaker_of_a_handler_that_names_none(
    dsn: str, runners: Runners
) -> None:
    """``spec.dependency`` is the key the operator reports Degraded by; the runner keys its
    breaker on it too, so a job that names its downstream only in the manifest is protected."""
    runner = runners.start(dsn, "--concurrency", "async=1")
    job = create_job(dsn, "loop.raise", max_retries=0, dependency="reports-db")
    submit(dsn, job, 15)

    eventually(
        lambda: states(dsn) == {"dead_lettered": 10, "retry_wait": 5}, what="the breaker to open"
    )
    with psycopg.connect(dsn) as conn:
        errors = {
            row[0]
            for row in conn.execute("SELECT last_error FROM job_runs WHERE state = 'retry_wait'")
        }
    assert errors == {"circuit breaker for dependency 'reports-db' is open"}
    labels = {"dependency": "reports-db", "sundial_circuit_state": "open"}
    assert runner.metric("sundial_circuit_state", **labels) == 1


def test_the_manifest_dependency_comes_before_the_handlers_registered_one(
    dsn: str, runners: Runners
) -> None:
    runner = runners.start(dsn, "--concurrency", "async=1")
    job = create_job(dsn, "loop.flaky_downstream", max_retries=0, dependency="payments-api")
    submit(dsn, job, 12)

    eventually(lambda: states(dsn).get("retry_wait") == 2, what="the breaker to open")
    labels = {"dependency": "payments-api", "sundial_circuit_state": "open"}
    assert runner.metric("sundial_circuit_state", **labels) == 1
    # The handler's own key ("flaky-api") saw none of these calls: no breaker was made for it.
    closed = {"dependency": "flaky-api", "sundial_circuit_state": "closed"}
    assert runner.metric("sundial_circuit_state", **closed) is None
