"""The demo's live view: rows from kubectl's JSON, in-place redraws on a TTY, changes as lines."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from sundial.localdev import demo, demo_screen

NOW = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)


def _run(name: str, phase: str | None, attempt: int | None = None, **extra: Any) -> dict[str, Any]:
    status = {k: v for k, v in {"phase": phase, "attempt": attempt}.items() if v is not None}
    status.update(extra.pop("status", {}))
    return {
        "kind": "JobRun",
        "metadata": {
            "name": name,
            "creationTimestamp": extra.pop("created", "2026-12-01T09:59:00Z"),
            "labels": extra.pop("labels", {}),
        },
        "spec": extra.pop("spec", {}),
        "status": status,
    }


SCHEDULED_JOB = {
    "kind": "ScheduledJob",
    "metadata": {"name": "hello", "creationTimestamp": "2026-12-01T09:58:00Z"},
    "spec": {"schedule": "@every 10s"},
    "status": {
        "nextScheduleTime": "2026-12-01T10:00:04Z",
        "activeCount": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled"}],
    },
}


def test_rows_put_scheduled_jobs_first_and_keep_phase_attempt_reason() -> None:
    objects = [
        _run("b", "Pending", 1, status={"reason": "OOMKilled", "podName": "b-1"}),
        SCHEDULED_JOB,
        _run("a", None, created="2026-12-01T09:58:30Z", spec={"dependsOn": ["b"]}),
    ]
    rows = demo_screen.table(objects, now=NOW)
    assert [row.key for row in rows] == ["sj/hello", "jr/a", "jr/b"]
    hello, a, b = rows
    assert hello.phase == "Ready Reconciled"
    assert hello.detail == "@every 10s, next in 4s"
    assert (a.phase, a.detail) == ("-", "after b")
    assert (b.phase, b.attempt, b.reason, b.detail) == ("Pending", "1", "OOMKilled", "pod b-1")


def test_tty_redraws_the_whole_screen_in_place() -> None:
    stream = io.StringIO()
    screen = demo_screen.Screen(stream, tty=True)
    rows = demo_screen.table([SCHEDULED_JOB, _run("x", "Running", 1)], now=NOW)
    screen.show(rows, title="demo", footer=["bye"])
    screen.show(rows, title="demo", footer=["bye"])
    frames = stream.getvalue().split("\x1b[H\x1b[J")
    assert frames[0] == "" and len(frames) == 3
    assert frames[1] == frames[2]
    assert "KIND" in frames[1] and "jr    x" in frames[1] and frames[1].endswith("bye\n")


def test_plain_output_prints_only_rows_that_changed_and_no_escapes() -> None:
    stream = io.StringIO()
    screen = demo_screen.Screen(stream, tty=False)
    first = [SCHEDULED_JOB, _run("x", "Pending"), _run("y", "Blocked")]
    screen.show(demo_screen.table(first, now=NOW), title="t")
    screen.show(demo_screen.table(first, now=NOW), title="t")
    later = [SCHEDULED_JOB, _run("x", "Succeeded", 2, status={"reason": "x"}), _run("y", "Blocked")]
    screen.show(demo_screen.table(later, now=NOW), title="t")
    lines = stream.getvalue().splitlines()
    assert "\x1b" not in stream.getvalue()
    assert [line.split()[1] for line in lines] == ["sj/hello", "jr/x", "jr/y", "jr/x"]
    assert lines[-1].endswith("jr/x Succeeded attempt 2 (x)")


def test_first_runs_needs_each_kind_and_a_second_attempt_for_the_oom_job() -> None:
    cron = _run("hello-1", "Succeeded", 1, labels={"sundial.dev/scheduledjob": "hello"})
    dag = [_run(name, "Succeeded", 1) for name in ("extract", "transform", "report", "load")]
    everything = [cron, _run("hello-in-20s", "Succeeded", 1), _run("needs-more-memory",
                  "Succeeded", 2), *dag]  # fmt: skip
    assert all(demo.first_runs(everything).values())
    # Each kind is missing in turn: only its entry is false.
    oom_first_try = [*everything[:2], _run("needs-more-memory", "Succeeded", 1), *dag]
    assert demo.first_runs(oom_first_try)["oom-then-more-memory"] is False
    assert demo.first_runs(everything[1:])["cron"] is False
    assert demo.first_runs(everything[:-1])["dag"] is False
    unfinished = [*everything[:1], _run("hello-in-20s", "Running", 1), *everything[2:]]
    assert demo.first_runs(unfinished) == {
        "cron": True, "one-shot": False, "oom-then-more-memory": True, "dag": True,
    }  # fmt: skip


def test_on_real_node_sends_every_pod_of_the_oom_job_to_the_real_node() -> None:
    import pathlib

    import yaml

    from sundial.api import job_run

    source = pathlib.Path(demo.__file__).resolve().parents[3] / "examples/demo/oom.yaml"
    images = {"SUNDIAL_IMAGE_BUSYBOX": "localhost/sundial/busybox:abc"}
    [document] = yaml.safe_load_all(demo.on_real_node(source.read_text(), images))
    pod = document["spec"]["job"]["template"]["spec"]
    assert pod["nodeSelector"] == {"sundial.dev/node-kind": "real"}
    assert pod["tolerations"][0]["key"] == "sundial.dev/real-node"
    assert {c["image"] for c in pod["containers"]} == {"localhost/sundial/busybox:abc"}
    assert {c["imagePullPolicy"] for c in pod["containers"]} == {"Never"}
    job_run.JobRun.model_validate(document)  # still a valid JobRun
