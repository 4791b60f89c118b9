"""Status of ScheduledJobs and JobRuns as kstatus reads it (Flux, ``kubectl wait``, Helm).

The oracle is kstatus itself: ``hack/kstatus`` wraps ``status.Compute`` of
``sigs.k8s.io/cli-utils``, built once into the user's cache (as the control plane is). It
judges (1) every Argo CD testdata object against ``kstatus_test.yaml`` beside it, and (2) what
the operator's own status functions write for every run state and ScheduledJob state.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import shutil
import subprocess
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import yaml

from sundial.operator import status
from sundial.store import history

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
CUSTOMIZATIONS = REPOSITORY / "charts" / "sundial" / "argocd" / "sundial.dev"
NOW = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)

#: Run state in PostgreSQL -> what kstatus must say of its JobRun.
RUN_STATE_VERDICTS = {
    "scheduled": "InProgress",
    "pending": "InProgress",
    "blocked": "InProgress",
    "running": "InProgress",
    "retry_wait": "InProgress",
    "completed": "Current",
    "failed": "Failed",
    "timed_out": "Failed",
    "dead_lettered": "Failed",
    "cancelled": "Current",
}


@pytest.fixture(scope="module")
def kstatus() -> Callable[[list[Mapping[str, Any]]], list[str]]:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not pathlib.Path(go).is_file():
        pytest.skip("hack/kstatus needs Go 1.26+ (https://go.dev/dl/) to build kstatus")
    built = subprocess.run(
        [str(REPOSITORY / "hack" / "kstatus" / "build")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    binary = built.stdout.strip().splitlines()[-1]

    def compute(objects: list[Mapping[str, Any]]) -> list[str]:
        answer = subprocess.run(
            [binary], input=json.dumps(objects), capture_output=True, text=True, check=True
        )
        return [verdict["status"] for verdict in json.loads(answer.stdout)]

    return compute


@pytest.mark.parametrize("kind", ["ScheduledJob", "JobRun"])
def test_kstatus_reads_every_testdata_object_as_documented(
    kstatus: Callable[[list[Mapping[str, Any]]], list[str]], kind: str
) -> None:
    cases = yaml.safe_load((CUSTOMIZATIONS / kind / "kstatus_test.yaml").read_text())["tests"]
    objects = [yaml.safe_load((CUSTOMIZATIONS / kind / c["inputPath"]).read_text()) for c in cases]
    verdicts = kstatus(objects)
    assert dict(zip([c["inputPath"] for c in cases], verdicts, strict=True)) == {
        c["inputPath"]: c["status"] for c in cases
    }


def _run(state: str) -> history.RunView:
    started = NOW - datetime.timedelta(minutes=5)
    finished = started + datetime.timedelta(seconds=8) if state in _FINISHED else None
    return history.RunView(
        1041, state, 2, "HandlerError" if state in {"failed", "dead_lettered"} else None,
        "boom" if state in {"failed", "dead_lettered", "retry_wait"} else None,
        started, started, finished,
    )  # fmt: skip


_FINISHED = {"completed", "failed", "timed_out", "dead_lettered", "cancelled"}


def _job_run(run: history.RunView, *, generation: int = 1, observed: int = 1) -> dict[str, Any]:
    desired = status.job_run_status(run, generation=observed)
    desired["conditions"] = status.conditions_with(
        None, status.job_run_conditions(run), now=NOW, generation=observed
    )
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": {"name": "manual", "namespace": "ns", "generation": generation},
        "spec": {"jobRef": {"name": "nightly"}},
        "status": {key: value for key, value in desired.items() if value is not None},
    }


def test_kstatus_reads_the_operators_job_run_status_for_every_run_state(
    kstatus: Callable[[list[Mapping[str, Any]]], list[str]],
) -> None:
    assert set(RUN_STATE_VERDICTS) == set(status.PHASES)
    states = list(RUN_STATE_VERDICTS)
    verdicts = kstatus([_job_run(_run(state)) for state in states])
    assert dict(zip(states, verdicts, strict=True)) == RUN_STATE_VERDICTS


def test_a_job_run_whose_new_generation_is_not_observed_is_in_progress(
    kstatus: Callable[[list[Mapping[str, Any]]], list[str]],
) -> None:
    objects = [_job_run(_run(state), generation=2, observed=1) for state in RUN_STATE_VERDICTS]
    assert set(kstatus(objects)) == {"InProgress"}


def _schedule(**overrides: Any) -> history.ScheduleView:
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "generation": 2,
        "next_fire_time": NOW + datetime.timedelta(minutes=1),
        "spread_offset_ms": 0,
        "suspended": False,
        "quarantined": False,
        "quarantine_message": None,
        "consecutive_failures": 0,
        "quarantine_after": None,
        "stalled_reason": None,
        "last_error": None,
        "active": True,
        "last_fire_time": NOW,
    }
    values.update(overrides)
    return history.ScheduleView(**values)


def _scheduled_job(
    schedule: history.ScheduleView | None, *, generation: int = 2, spec_error: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": str(uuid.uuid4())},
        "spec": {"schedule": "*/5 * * * *"},
    }
    body["metadata"]["generation"] = generation
    desired = status.scheduled_job_status(
        body, spec_error=spec_error, schedule=schedule, window=None, missed=None, now=NOW
    )
    body["status"] = {key: value for key, value in desired.items() if value is not None}
    return body


SCHEDULED_JOB_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "ready": ({"schedule": _schedule()}, "Current"),
    "suspended": ({"schedule": _schedule(suspended=True)}, "Current"),
    "not stored yet": ({"schedule": None}, "InProgress"),
    "newer generation than stored": ({"schedule": _schedule(generation=1)}, "InProgress"),
    "invalid spec": ({"schedule": _schedule(), "spec_error": "spec.args: too big"}, "Failed"),
    "unknown time zone": (
        {"schedule": _schedule(stalled_reason="UnknownTimeZone", last_error="Mars/Base")},
        "Failed",
    ),
    "quarantined after failures": (
        {"schedule": _schedule(quarantined=True, quarantine_message="suspended after 3 ...")},
        "Failed",
    ),
    "quarantined by a rule": (
        {
            "schedule": _schedule(
                quarantined=True, quarantine_message="failurePolicy Quarantine: 42"
            )
        },
        "Failed",
    ),
}


def test_kstatus_reads_the_operators_scheduled_job_status(
    kstatus: Callable[[list[Mapping[str, Any]]], list[str]],
) -> None:
    names = list(SCHEDULED_JOB_CASES)
    objects = [_scheduled_job(**SCHEDULED_JOB_CASES[name][0]) for name in names]
    assert dict(zip(names, kstatus(objects), strict=True)) == {
        name: verdict for name, (_, verdict) in SCHEDULED_JOB_CASES.items()
    }
