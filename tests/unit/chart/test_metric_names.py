"""Every metric the chart's alert rules and dashboard name is exported by some Sundial process.

The exporters are the registries the processes serve on /metrics: a runner's own registry
(``RunnerMetrics``), and the default registry that the operator and ``sundial scheduler``
serve, holding the trigger's, the maintainer's and the pod launcher's metrics and the
operator's per-ScheduledJob gauges. A rule on a metric nobody exports never fires, silently;
this test is what notices a renamed metric.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prometheus_client
import yaml

from sundial.observability import maintainer_metrics, metrics, pod_metrics, trigger_metrics
from sundial.operator import scheduled_job_metrics

CHART = Path(__file__).resolve().parents[3] / "charts" / "sundial"
NAME = re.compile(r"\b(sundial_[a-z0-9_]+)")
#: Prometheus' own series, which no Sundial process exports.
PROMETHEUS = {"up"}
#: kube-state-metrics' series that a rule reads on purpose (docs/operations.md names the
#: dependency): the migrate hook is a Job, and only kube-state-metrics reports a failed Job.
KUBE_STATE_METRICS = {"kube_job_status_failed"}


def _exported(text: str) -> set[str]:
    """Sample names a scrape of this exposition can return (from its TYPE lines, so that a
    family with no series yet counts as well)."""
    names: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("# TYPE "):
            continue
        _, _, name, kind = line.split()
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
    return names


def _exporters() -> dict[str, set[str]]:
    assert maintainer_metrics.FINISHED_RUNS and pod_metrics.SCHEDULE_LAG and trigger_metrics.FIRES
    scheduled_job_metrics.collector()
    return {
        "runner": _exported(metrics.RunnerMetrics().exposition().decode()),
        "operator and scheduler": _exported(prometheus_client.generate_latest().decode()),
    }


def _expressions() -> Iterator[tuple[str, str]]:
    rules = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"rule {rule['alert']}", rule["expr"]
    dashboard: dict[str, Any] = json.loads((CHART / "files" / "grafana-dashboard.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield f"panel {panel['title']!r}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable {variable['name']}", variable["query"]


def test_every_metric_the_rules_and_the_dashboard_name_is_exported() -> None:
    exporters = _exporters()
    everything = set().union(*exporters.values())
    missing = []
    seen = set()
    for where, expression in _expressions():
        for name in NAME.findall(expression):
            seen.add(name)
            if name not in everything:
                missing.append(f"{where}: {name}")
        bare = re.findall(r"(?<![\w{,=\"])([a-z_]+)\{", expression)
        for name in bare:
            if not name.startswith("sundial_") and name not in PROMETHEUS | KUBE_STATE_METRICS:
                missing.append(f"{where}: {name} (not a Sundial metric)")
    assert missing == [], "named but exported by no process:\n" + "\n".join(missing)
    # The parts of the issue are each covered: lag, per-ScheduledJob gauges, window gauges.
    assert {
        "sundial_schedule_lag_seconds_bucket",
        "sundial_scheduledjob_next_schedule_timestamp_seconds",
        "sundial_window_finished_runs",
        "sundial_pending_runs",
        "sundial_circuit_state",
    } <= seen


def test_the_check_notices_a_name_nobody_exports() -> None:
    everything = set().union(*_exporters().values())
    assert "sundial_fires_total" in everything
    assert "sundial_fires_totals" not in everything
    assert "sundial_scheduledjob_active" in everything
