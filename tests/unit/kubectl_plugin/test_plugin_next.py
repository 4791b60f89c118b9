"""``kubectl sundial next -f FILE``: a manifest's next fire times, offline, with the DST notes
and the spread window a user plans around; a file without one ScheduledJob, or a schedule the
operator would refuse, is a clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from sundial.kubectl_plugin import main, outcome


def _manifest(tmp_path: Path, *documents: dict[str, Any]) -> Path:
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def _job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"handler": {"name": "etl.run"}, **spec},
    }


def test_the_table_shows_the_fires_in_the_zone_and_in_utc_with_the_dst_notes(
    tmp_path: Path,
) -> None:
    path = _manifest(tmp_path, _job("nightly", schedule="30 2 * * *", timeZone="Europe/Berlin"))
    result = CliRunner().invoke(
        main.cli, ["next", "-f", str(path), "--after", "2026-03-28T12:00", "--count", "2"]
    )
    assert result.exit_code == 0, result.output
    header, spring, ordinary = result.output.splitlines()
    assert header.split()[:4] == ["FIRE", "(Europe/Berlin)", "UTC", "RUN"]
    assert spring.startswith("2026-03-29T03:00:00+02:00   2026-03-29T01:00:00Z")
    assert "02:30 does not exist on 2026-03-29 (clocks spring forward)" in spring
    assert ordinary.startswith("2026-03-30T02:30:00+02:00   2026-03-30T00:30:00Z")

    autumn = CliRunner().invoke(
        main.cli, ["next", "-f", str(path), "--after", "2026-10-25T00:00", "-o", "json"]
    )
    document = json.loads(autumn.output)
    first = document["fires"][0]
    assert (first["fireTime"], first["localTime"]) == (
        "2026-10-25T00:30:00Z",
        "2026-10-25T02:30:00+02:00",
    )
    assert "happens twice" in first["note"] and "the second does not fire" in first["note"]
    assert len(document["fires"]) == 10


def test_a_spread_is_a_window_before_the_job_exists(tmp_path: Path) -> None:
    path = _manifest(tmp_path, _job("spread", schedule="0 * * * *", spreadSeconds=300))
    result = CliRunner().invoke(
        main.cli, ["next", "-f", str(path), "--after", "2026-01-01T00:00:00Z", "-o", "json"]
    )
    fires = json.loads(result.output)["fires"]
    assert fires[0]["fireTime"] == "2026-01-01T01:00:00Z" and fires[0]["runAt"] is None
    table = CliRunner().invoke(
        main.cli, ["next", "-f", str(path), "--after", "2026-01-01T00:00:00Z", "--count", "1"]
    )
    assert "2026-01-01T01:00:00Z + up to 300s" in table.output


def test_a_file_with_several_jobs_needs_a_name_and_a_bad_schedule_is_refused(
    tmp_path: Path,
) -> None:
    path = _manifest(
        tmp_path, _job("a", schedule="0 1 * * *"), _job("b", schedule="0 2 30 2 *")
    )  # fmt: skip
    several = _refusal(["next", "-f", str(path)])
    assert several.code == outcome.USAGE
    assert "2 ScheduledJobs" in several.message
    assert "kubectl sundial next NAME -f FILE" in several.message
    named = CliRunner().invoke(main.cli, ["next", "a", "-f", str(path), "--count", "1"])
    assert named.exit_code == 0 and "T01:00:00" in named.output
    never = _refusal(["next", "b", "-f", str(path)])
    assert never.code == outcome.FAILED
    assert "ScheduledJob b" in never.message and "0 2 30 2 *" in never.message
    nothing = _refusal(["next"])
    assert nothing.code == outcome.USAGE and "-f FILE" in nothing.message


def _refusal(arguments: list[str]) -> outcome.PluginError:
    """The error ``kubectl sundial`` exits with (its code is the process's exit status)."""
    result = CliRunner().invoke(main.cli, arguments, standalone_mode=False)
    assert isinstance(result.exception, outcome.PluginError), result.output
    return result.exception


def test_the_dst_policy_of_the_manifest_decides_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    second = _job(
        "second",
        schedule="30 2 * * *",
        timeZone="Europe/Berlin",
        dstPolicy={"repeatedTime": "Second"},
    )
    typo = _job("typo", schedule="30 2 * * *", dstPolicy={"repeatedTime": "Twice"})
    path = _manifest(tmp_path, second, typo)
    result = CliRunner().invoke(
        main.cli, ["next", "second", "-f", str(path), "--after", "2026-10-25T00:00", "-o", "json"]
    )
    first = json.loads(result.output)["fires"][0]
    assert (first["fireTime"], first["localTime"]) == (
        "2026-10-25T01:30:00Z",
        "2026-10-25T02:30:00+01:00",
    )
    assert "at the second; the first does not fire" in first["note"]
    refused = _refusal(["next", "typo", "-f", str(path)])
    assert refused.code == outcome.FAILED
    assert "dstPolicy.repeatedTime" in refused.message and "'Twice'" in refused.message
