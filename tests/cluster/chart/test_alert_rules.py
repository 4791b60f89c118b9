"""The chart's PrometheusRule, as helm renders it, passes ``promtool check rules``, and
``promtool test rules`` proves that each alert fires on a small series set (alert-series.yaml)
and that the guarded ones stay quiet (a suspended ScheduledJob, a closed circuit, a rare dead
letter). Skipped with a message when promtool is absent (Debian: ``apt-get install
prometheus``, which ships /usr/bin/promtool)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

SERIES = Path(__file__).with_name("alert-series.yaml")


@pytest.fixture
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed: apt-get install prometheus (it ships promtool)")
    return found


@pytest.fixture
def rules_file(render: Callable[..., Any], tmp_path: Path) -> Path:
    objects = render({"metrics": {"prometheusRule": {"enabled": True}}})
    [rule] = [o for o in objects if o["kind"] == "PrometheusRule"]
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    return path


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rendered_rules_pass_promtool_check(promtool: str, rules_file: Path) -> None:
    checked = _run(promtool, "check", "rules", str(rules_file), cwd=rules_file.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


RUNBOOKS = Path(__file__).resolve().parents[3] / "docs" / "runbooks.md"
RUNBOOK_BASE = "https://github.com/sundial-scheduler/sundial/blob/main/docs/runbooks.md"


def test_each_alert_fires_on_its_series(promtool: str, rules_file: Path) -> None:
    cases = yaml.safe_load(SERIES.read_text())
    cases["rule_files"] = [rules_file.name]
    # every alert fires with its runbook_url, which the chart adds to each rule
    for case in cases["tests"]:
        for check in case["alert_rule_test"]:
            for expected in check["exp_alerts"]:
                expected["exp_annotations"]["runbook_url"] = (
                    f"{RUNBOOK_BASE}#{check['alertname'].lower()}"
                )
    tests = rules_file.parent / "alert-tests.yaml"
    tests.write_text(yaml.safe_dump(cases))

    alerts = {
        rule["alert"]
        for group in yaml.safe_load(rules_file.read_text())["groups"]
        for rule in group["rules"]
    }
    fired = {
        check["alertname"]
        for case in cases["tests"]
        for check in case["alert_rule_test"]
        if check["exp_alerts"]
    }
    assert alerts - fired == set(), "alerts with no case in alert-series.yaml that fires them"
    assert fired <= alerts

    tested = _run(promtool, "test", "rules", tests.name, cwd=tests.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_alert_has_a_runbook_section(rules_file: Path) -> None:
    sections = {
        line.removeprefix("## ").strip().lower()
        for line in RUNBOOKS.read_text().splitlines()
        if line.startswith("## ")
    }
    for group in yaml.safe_load(rules_file.read_text())["groups"]:
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            assert url.startswith(RUNBOOK_BASE + "#"), url
            assert url.split("#", 1)[1] in sections, f"docs/runbooks.md lacks ## {rule['alert']}"
