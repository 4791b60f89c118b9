"""The database password never appears in an error, a log line or a command's output.

libpq repeats a connection string it cannot parse, password and all, and psycopg_pool logs
that error on every retry. Each DSN here is one a person could mistype; none reaches a server.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import psycopg_pool
import pytest

from sundial.store import dsn as dsns
from sundial.store import errors, pool

PASSWORD = "s3cr3t-Pa55word"

MALFORMED = [
    f"postgres:/app:{PASSWORD}@db.example/sundial",  # one slash short: not a URL any more
    f"app:{PASSWORD}@db.example/sundial",  # no scheme
    f"postgresql://app:{PASSWORD}@db.example:notaport/sundial",
    f"host=db.example password={PASSWORD} port=5432 nonsense",
    f"host=db.example password='{PASSWORD}' sslmode=sometimes",
    f"postgresql://app:{PASSWORD}@127.0.0.1:1/sundial",  # well-formed, nobody listening
]


def _chain(error: BaseException) -> str:
    texts = []
    current: BaseException | None = error
    while current is not None:
        texts.append(f"{type(current).__name__}: {current}")
        # What a traceback prints: the cause, else the context unless it was suppressed.
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return "\n".join(texts)


@pytest.mark.parametrize("dsn", MALFORMED)
async def test_a_bad_dsn_is_refused_without_its_password(dsn: str) -> None:
    with pytest.raises(errors.StoreError) as raised:
        await pool.check_reachable(dsn, timeout_seconds=1)
    assert PASSWORD not in _chain(raised.value)
    assert str(raised.value)  # it still says what is wrong


@pytest.mark.parametrize("dsn", MALFORMED[:2] + MALFORMED[-1:])
async def test_the_pools_retries_log_no_password(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="psycopg")
    opened = pool.Pool(dsn, open=False, min_size=1, timeout=1.5, reconnect_timeout=1.5)
    dsns.remember(dsn)
    try:
        with pytest.raises(psycopg_pool.PoolTimeout):
            await opened.open(wait=True, timeout=1.5)
    finally:
        await opened.close()
    retries = [record for record in caplog.records if record.name.startswith("psycopg")]
    assert retries, "the pool logged no retry: nothing was checked"
    for record in retries:
        assert PASSWORD not in record.getMessage()
        assert record.exc_info is None or PASSWORD not in str(record.exc_info[1])


def test_the_command_line_prints_no_password() -> None:
    for dsn in MALFORMED[:2]:
        result = subprocess.run(
            [sys.executable, "-m", "sundial", "runs", "--dsn", dsn],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SUNDIAL_DSN": ""},
        )
        assert result.returncode != 0
        assert PASSWORD not in result.stdout + result.stderr, result.stderr
        assert "not a libpq connection string" in result.stderr
