"""A runner that maintains the store itself (``--maintenance``, no scheduler or operator beside
it) says at start, as the maintainer does, when the server's autovacuum settings would let the
hot table's dead rows pile up. A real runner process against a throwaway PostgreSQL left at its
defaults (a one-minute naptime), as a managed PostgreSQL nobody tuned would be."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import psycopg

from sundial.localdev import postgres
from sundial.store import migrate
from support.runner_loop import HANDLERS, TESTS_DIR, eventually


def _entries(path: pathlib.Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def test_a_maintaining_runner_names_the_naptime_to_change(tmp_path: pathlib.Path) -> None:
    with postgres.throwaway_postgres(extra_settings={"autovacuum_naptime": "1min"}) as untuned:
        with psycopg.connect(untuned.dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE untuned")
        dsn = untuned.dsn_for("untuned")
        migrate.migrate(dsn)
        log_path = tmp_path / "runner.log"
        with log_path.open("wb") as log:
            command = [
                sys.executable, "-m", "sundial", "runner",
                "--dsn", dsn, "--handlers", HANDLERS, "--metrics-port", "-1",
                "--concurrency", "async=1", "--maintenance",
            ]  # fmt: skip
            runner = subprocess.Popen(
                command, env=dict(os.environ, PYTHONPATH=str(TESTS_DIR)), stdout=log, stderr=log
            )
            try:

                def warned() -> list[dict[str, Any]] | None:
                    assert runner.poll() is None, log_path.read_text()
                    entries = _entries(log_path)
                    if not any(e.get("message") == "runner starting" for e in entries):
                        return None
                    found = [
                        e
                        for e in entries
                        if e.get("message") == "PostgreSQL settings need a change"
                    ]
                    return found or None

                [warning] = eventually(warned, what="the runner to name the setting")
            finally:
                runner.terminate()
                runner.wait(60)
    assert "autovacuum_naptime is 60s" in warning["problem"]
    assert "set autovacuum_naptime = 10s" in warning["problem"]
