"""The operator through a PostgreSQL failover, as an orchestrator (Patroni, CloudNativePG) does
it: the primary's processes are killed with SIGKILL and its synchronous standby promoted a
moment later. The operator and a runner reach PostgreSQL through one DSN, a libpq host list
with ``target_session_attrs=read-write`` (docs/operations.md "PostgreSQL restarts and
failover"), and the operator keeps the default lease; nothing is restarted by hand.
Afterwards the operator, still the same process, fires the ScheduledJob on the new primary,
mirrors the runs' outcomes into its status and submits a JobRun applied after the promotion;
every fire it recorded is there once.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sundial.localdev import postgres
from sundial.store import migrate
from support.operator import (
    OperatorProcess,
    RunnerProcess,
    condition,
    get_json,
    running,
    scheduled_job_manifest,
)
from support.polling import wait_until

#: An orchestrator's detection time, shortened to keep the test quick.
PROMOTE_AFTER_SECONDS = 2.0


@dataclass(frozen=True)
class Pair:
    primary: postgres.ThrowawayPostgres
    standby: postgres.ThrowawayPostgres
    dsn: str  # the host list: primary first, then the standby

    def standby_dsn(self) -> str:
        return self.standby.dsn_for("sundial")


@pytest.fixture
def failover_pair() -> Iterator[Pair]:
    """A primary with a synchronous streaming standby (acknowledged commits are on both),
    a migrated database, and the host-list DSN that follows whichever takes writes."""
    settings = {"synchronous_commit": "on"}
    with contextlib.ExitStack() as stack:
        primary = stack.enter_context(postgres.throwaway_postgres(extra_settings=settings))
        with psycopg.connect(primary.dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE sundial")
        migrate.migrate(primary.dsn_for("sundial"))
        standby = postgres.ThrowawayPostgres(extra_settings=settings)
        stack.callback(standby.stop)
        standby.start_standby_of(primary)
        with psycopg.connect(primary.dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.execute("SELECT pg_reload_conf()")
            wait_until(
                lambda: conn.execute(
                    "SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'"
                ).fetchall(),
                within=30,
                what="the standby to become synchronous",
            )
        dsn = (
            f"postgresql://{primary.user}@127.0.0.1:{primary.port},"
            f"127.0.0.1:{standby.port}/sundial?target_session_attrs=read-write"
        )
        yield Pair(primary, standby, dsn)


def _status(kubectl: Any, namespace: str, kind: str, name: str) -> dict[str, Any]:
    return get_json(kubectl, "-n", namespace, kind, name).get("status") or {}


def _since(stamp: str | None) -> datetime.datetime | None:
    return None if stamp is None else datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_the_operator_fires_mirrors_and_submits_on_the_promoted_standby(
    sundial_crds_applied: None,
    failover_pair: Pair,
    kubeconfig: Path,
    kubectl: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    # The default lease (15 s), as the chart runs it: a leader that cannot renew within its
    # lease exits for its supervisor to restart (scheduler.leadership), and the 5 s lease of
    # the other operator tests is about as long as a failover takes here.
    operator = OperatorProcess(
        failover_pair.dsn, kubeconfig, namespace, tmp_path, extra_args=["--lease-ttl", "15"]
    )
    with running(operator), RunnerProcess(failover_pair.dsn, tmp_path):
        kubectl(
            "apply", "-n", namespace, "-f", "-",
            stdin=scheduled_job_manifest("tick", schedule="@every 2s"),
        )  # fmt: skip

        def succeeded_once() -> Any:
            operator.assert_alive()
            return _status(kubectl, namespace, "sj", "tick").get("lastSuccessfulTime")

        wait_until(succeeded_once, within=60, what="a fire of tick to succeed on the primary")

        failover_pair.primary.kill()
        time.sleep(PROMOTE_AFTER_SECONDS)
        failover_pair.standby.promote()
        promoted = datetime.datetime.now(datetime.UTC)

        def fired_on_the_new_primary() -> Any:
            with psycopg.connect(failover_pair.standby_dsn()) as conn:
                row = conn.execute(
                    "SELECT min(r.finished_at) FROM job_runs r JOIN schedule_fires f"
                    " ON f.run_id = r.id WHERE r.state = 'completed' AND f.created_at > %s",
                    (promoted,),
                ).fetchone()
            return row[0] if row else None

        first_completed = wait_until(
            fired_on_the_new_primary, within=60, what="a fire on the new primary to complete"
        )

        def mirrored_after_the_promotion() -> Any:
            operator.assert_alive()
            last = _since(_status(kubectl, namespace, "sj", "tick").get("lastSuccessfulTime"))
            return last if last is not None and last > promoted else None

        wait_until(
            mirrored_after_the_promotion,
            within=60,
            what="tick's status to show a success after the promotion",
        )
        shown = datetime.datetime.now(datetime.UTC)
        job_run = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": {"name": "after-failover"},
            "spec": {"job": {"handler": {"name": "tests.ok"}}},
        }
        kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(job_run))

        def job_run_succeeded() -> Any:
            operator.assert_alive()
            status = _status(kubectl, namespace, "jr", "after-failover")
            return status if status.get("phase") == "Succeeded" else None

        wait_until(job_run_succeeded, within=60, what="a JobRun applied after the failover")
        ready = condition(get_json(kubectl, "-n", namespace, "sj", "tick"), "Ready") or {}
        assert ready.get("status") == "True", ready
        print(
            f"\nfailover: first fire completed on the new primary "
            f"{(first_completed - promoted).total_seconds():.1f} s after its promotion, "
            f"shown in the ScheduledJob's status {(shown - promoted).total_seconds():.1f} s "
            "after it"
        )

    assert operator.starts == 1  # the same process throughout
    with psycopg.connect(failover_pair.standby_dsn()) as conn:
        repeated = conn.execute(
            "SELECT count(*) FROM (SELECT schedule_id, fire_time FROM schedule_fires"
            " GROUP BY 1, 2 HAVING count(*) > 1) d"
        ).fetchone()
    assert repeated == (0,)
