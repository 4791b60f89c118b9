"""The one backoff of every loop that waits for the database."""

from __future__ import annotations

import logging

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sundial.store import errors, reconnect

log = logging.getLogger("test.reconnect")


@given(st.integers(min_value=-3, max_value=10_000), st.floats(min_value=0.06, max_value=30))
def test_the_delay_stays_between_the_floor_and_the_cap(failures: int, cap: float) -> None:
    delay = reconnect.retry_delay(failures, cap_seconds=cap)
    assert reconnect.FLOOR_SECONDS <= delay <= cap


def test_failures_are_counted_logged_and_reset(caplog: pytest.LogCaptureFixture) -> None:
    retry = reconnect.Backoff("claim failed; retrying", logger=log, log_every=3)
    error = errors.StoreUnavailableError("OperationalError: the database system is shutting down")
    with caplog.at_level(logging.WARNING, logger=log.name):
        delays = [retry.failed(error, results=2) for _ in range(7)]
    assert retry.failures == 7
    assert all(0 < delay <= reconnect.CAP_SECONDS for delay in delays)
    # The first failure, then every third.
    assert [r.failures_in_a_row for r in caplog.records] == [1, 3, 6]  # type: ignore[attr-defined]
    first = caplog.records[0]
    assert first.getMessage() == "claim failed; retrying"
    assert (
        first.error
        == "StoreUnavailableError: OperationalError: the database system is shutting down"
    )  # type: ignore[attr-defined]
    assert first.results == 2  # type: ignore[attr-defined]
    assert retry.succeeded() is True  # a reconnect
    assert retry.failures == 0
    assert retry.succeeded() is False  # nothing to recover from


def test_both_the_store_error_and_psycopgs_count_as_the_database_away() -> None:
    assert issubclass(errors.StoreUnavailableError, reconnect.ERRORS)
    assert issubclass(psycopg.OperationalError, reconnect.ERRORS)
    assert issubclass(psycopg.InterfaceError, reconnect.ERRORS)
    assert not issubclass(errors.StatementError, reconnect.ERRORS)
