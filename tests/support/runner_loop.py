"""Real `sundial runner` processes and database helpers for the claim-loop tests."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from support import polling, store

TESTS_DIR = pathlib.Path(__file__).resolve().parents[1]
HANDLERS = "handlers.loop_jobs"


def create_job(dsn: str, handler: str, **overrides: Any) -> uuid.UUID:
    """``store.create_job`` for ``handler``: a name of its own, the async model unless
    ``overrides`` say otherwise; returns its id."""
    name = f"{handler}-{uuid.uuid4().hex[:6]}"
    return store.create_job(
        dsn, name, **{"handler": handler, "execution_model": "async", **overrides}
    )


def submit(
    dsn: str, job: uuid.UUID, count: int = 1, args: dict[str, Any] | None = None
) -> list[int]:
    """Insert ``count`` pending runs of ``job`` in one statement (copying the job's settings,
    as runs.submit does) and return their ids."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            """
            INSERT INTO job_runs (job_id, queue, handler, execution_model, timeout_seconds,
                                  max_retries, backoff_base_seconds, backoff_cap_seconds,
                                  max_lost_leases, state, priority, run_at, dispatch_key, args,
                                  namespace)
            SELECT j.id, j.queue, j.handler, j.execution_model, j.timeout_seconds,
                   j.max_retries, j.backoff_base_seconds, j.backoff_cap_seconds,
                   j.max_lost_leases,
                   'pending', j.priority, now(), sundial_dispatch_key(now(), j.priority), %s,
                   j.namespace
            FROM job_definitions j, generate_series(1, %s)
            WHERE j.id = %s
            RETURNING id
            """,
            (Jsonb(args or {}), count, job),
        ).fetchall()
    return sorted(row[0] for row in rows)


def run_row(dsn: str, run_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn) as conn:
        cursor = conn.execute(
            "SELECT state, attempt, retries_used, lease_owner, failure_reason, failure_detail,"
            " last_error, lease_expiries FROM job_runs WHERE id = %s",
            (run_id,),
        )
        row = cursor.fetchone()
        assert row is not None, f"run {run_id} does not exist"
        names = [column.name for column in cursor.description or ()]
    return dict(zip(names, row, strict=True))


def states(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT state, count(*) FROM job_runs GROUP BY state").fetchall()
    return {state: count for state, count in rows}


#: What a predicate may raise while PostgreSQL or a runner restarts under it: "not yet".
RESTARTING = (psycopg.OperationalError, OSError)


def eventually(
    predicate: Callable[[], Any], *, within: float = polling.DEFAULT_WITHIN, what: str = ""
) -> Any:
    """``polling.wait_until`` through restarts: these tests restart PostgreSQL and runners
    while they wait, so a refused connection counts as "not yet" (``RESTARTING``). The default
    bound is the suite's "surely within" (``polling.DEFAULT_WITHIN``, 120 s): 30 s was once
    too short for a runner's first claim at a load of 30. A window in which something must
    NOT happen is not a wait and does not belong here."""
    return polling.wait_until(predicate, within=within, what=what, every=0.05, tolerate=RESTARTING)


class RunnerProcess:
    """One `sundial runner` child; its JSON log goes to a file the test can read."""

    def __init__(
        self,
        dsn: str,
        log_dir: pathlib.Path,
        *args: str,
        worker_id: str,
        maintenance: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.log_path = log_dir / f"{worker_id}.log"
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), **(env or {})}
        command = [
            sys.executable, "-m", "sundial", "runner",
            "--dsn", dsn,
            "--handlers", HANDLERS,
            "--worker-id", worker_id,
            "--metrics-port", "0",
            "--metrics-host", "127.0.0.1",
            "--concurrency", "process=1",
            # No scheduler runs in these tests: the runners reap and promote themselves.
            *(["--maintenance"] if maintenance else []),
            *args,
        ]  # fmt: skip
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, stderr=self._log, stdout=self._log, env=env)
        self.port = eventually(self._port, what=f"{worker_id} to start")

    def _port(self) -> int | None:
        # The log first: a runner may start and end (a handler that kills it) between polls.
        for entry in self.logs():
            if entry.get("message") == "runner starting":
                return int(entry["metrics_port"])
        if self.process.poll() is not None:
            self._log.close()
            raise AssertionError(f"runner exited early:\n{self.log_path.read_text()}")
        return None

    def logs(self) -> list[dict[str, Any]]:
        entries = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                entries.append({"message": line, "raw": True})
        return entries

    def logged(self, message: str, **fields: Any) -> list[dict[str, Any]]:
        return [
            e
            for e in self.logs()
            if e.get("message") == message and all(e.get(k) == v for k, v in fields.items())
        ]

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())

    def metric(self, name: str, **labels: str) -> float | None:
        """The value of one sample in the exposition, or None if absent."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith("#"):
                continue
            key, _, value = line.rpartition(" ")
            sample, _, label_text = key.partition("{")
            got = ",".join(sorted(label_text.rstrip("}").split(","))) if label_text else ""
            if sample == name and got == want:
                return float(value)
        return None

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def terminate_and_wait(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(30)
        self._log.close()


class Runners:
    def __init__(self, log_dir: pathlib.Path) -> None:
        self.log_dir = log_dir
        self.started: list[RunnerProcess] = []

    def start(
        self,
        dsn: str,
        *args: str,
        worker_id: str | None = None,
        env: dict[str, str] | None = None,
        maintenance: bool = True,
    ) -> RunnerProcess:
        name = worker_id or f"runner-{len(self.started) + 1}"
        runner = RunnerProcess(
            dsn, self.log_dir, *args, worker_id=name, env=env, maintenance=maintenance
        )
        self.started.append(runner)
        return runner

    def close(self) -> Iterator[None]:
        for runner in self.started:
            runner.kill()
        yield None
