"""Arguments of ``run`` and ``backfill``: how they parse, and what a bad one is told."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.api import job_run, validate
from sundial.kubectl_plugin import actions, backfilling, outcome, waiting
from sundial.scheduling import cron


def test_arg_values_are_json_when_they_parse_and_strings_otherwise(tmp_path: Path) -> None:
    base = tmp_path / "args.yaml"
    base.write_text("day: 2026-11-30\nretries: 3\nkeep: base\n")
    args = actions.parse_args(("n=5", "flags=[1,2]", "day=tomorrow", "empty="), str(base))
    assert args == {
        "day": "tomorrow",
        "retries": 3,
        "keep": "base",
        "n": 5,
        "flags": [1, 2],
        "empty": "",
    }


@pytest.mark.parametrize(
    ("pairs", "content", "words"),
    [
        (("novalue",), None, "write KEY=VALUE"),
        (("=x",), None, "write KEY=VALUE"),
        ((), "[1, 2]", "must hold a mapping"),
        ((), "a: [", "not JSON or YAML"),
        (tuple(f"k{i}=1" for i in range(65)), None, "more than the limit of 64"),
        (("blob=" + "x" * (validate.MAX_ARGS_BYTES + 1),), None, "pass a reference"),
    ],
)
def test_bad_arguments_are_refused_as_usage_errors(
    tmp_path: Path, pairs: tuple[str, ...], content: str | None, words: str
) -> None:
    path = None
    if content is not None:
        (tmp_path / "f").write_text(content)
        path = str(tmp_path / "f")
    with pytest.raises(outcome.PluginError, match=words) as raised:
        actions.parse_args(pairs, path)
    assert raised.value.code == outcome.USAGE


def test_a_job_run_body_is_checked_against_the_model() -> None:
    body = actions.job_run_body(
        "nightly", name=None, args={"a": 1}, delay_seconds=90, run_at=None, priority=3
    )
    assert body["metadata"]["generateName"] == "nightly-run-"
    assert body["spec"] == {
        "jobRef": {"name": "nightly"},
        "args": {"a": 1},
        "delaySeconds": 90,
        "priority": 3,
    }
    with pytest.raises(outcome.PluginError, match=r"spec\.delaySeconds"):
        actions.job_run_body(
            "nightly", name=None, args={}, delay_seconds=10**9, run_at=None, priority=None
        )


def test_at_needs_an_offset() -> None:
    assert actions.parse_at("2026-12-01T09:00:00Z") == datetime.datetime(
        2026, 12, 1, 9, tzinfo=datetime.UTC
    )
    with pytest.raises(outcome.PluginError, match="give the offset too"):
        actions.parse_at("2026-12-01T09:00:00")


def test_every_terminal_phase_has_an_exit_code_and_they_differ_by_outcome() -> None:
    assert waiting.EXIT_FOR_PHASE == {
        "Succeeded": 0,
        "Failed": 1,
        "TimedOut": 1,
        "DeadLettered": 1,
        "Cancelled": 4,
    }
    assert {outcome.TIMEOUT, outcome.NOT_FOUND, outcome.USAGE}.isdisjoint(
        waiting.EXIT_FOR_PHASE.values()
    )
    line = waiting.describe(
        {"status": {"phase": "Failed", "attempt": 2, "reason": "OOMKilled", "lastError": "a\nb"}}
    )
    assert line == "Failed (attempt 2): OOMKilled - a"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["*/7 * * * *", "0 */5 * * *", "30 2 * * 0", "@hourly", "15 1 29 2 *"]),
    st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"]),
    st.datetimes(min_value=datetime.datetime(2025, 1, 1), max_value=datetime.datetime(2027, 1, 1)),
    st.integers(min_value=0, max_value=3 * 86400),
)
def test_backfill_times_are_every_fire_in_the_closed_range(
    schedule: str, zone: str, start: datetime.datetime, span: int
) -> None:
    """The oracle: a minute-by-minute walk asking the schedule for its next fire."""
    parsed = cron.parse_schedule(schedule, zone)
    first = start.replace(tzinfo=datetime.UTC, second=0, microsecond=0)
    last = first + datetime.timedelta(seconds=span)
    found = list(backfilling.fire_times_between(parsed, first, last))
    expected = []
    moment = first - datetime.timedelta(minutes=1)
    while True:
        moment = parsed.next_fire_after(moment)
        if moment > last:
            break
        expected.append(moment)
    assert found == expected
    assert all(first <= t <= last for t in found)
    names = [backfilling.run_name("job", t) for t in found]
    assert len(set(names)) == len(names)


def test_backfill_bounds_without_an_offset_are_read_in_the_jobs_zone() -> None:
    paris = ZoneInfo("Europe/Paris")
    assert backfilling.parse_bound("2026-07-01", paris, "--from") == datetime.datetime(
        2026, 6, 30, 22, tzinfo=datetime.UTC
    )
    assert backfilling.parse_bound("2026-07-01T00:00:00Z", paris, "--from") == datetime.datetime(
        2026, 7, 1, tzinfo=datetime.UTC
    )
    with pytest.raises(outcome.PluginError, match="not a time"):
        backfilling.parse_bound("yesterday", paris, "--from")


def test_backfill_names_and_keys_are_deterministic_and_valid() -> None:
    moment = datetime.datetime(2026, 11, 1, 9, 0, tzinfo=datetime.UTC)
    assert backfilling.run_name("nightly", moment) == "nightly-bf-202611010900"
    key = backfilling.idempotency_key("0b5c", moment)
    assert key == "backfill.0b5c.20261101T090000Z"
    body = backfilling._job_run("nightly", "0b5c", "nightly-bf-202611010900", moment)
    assert json.dumps(body["spec"]["fireTime"]) == '"2026-11-01T09:00:00Z"'
    # What backfill sends passes the same model check as a JobRun the operator reads.
    job_run.JobRunSpec.model_validate(body["spec"])
