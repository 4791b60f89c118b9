"""The chart's SundialCircuitOpen alert fires on the runner's Enum ``sundial_circuit_state``
(ADR 0035) when a circuit is open, and not when it is closed or half-open: checked by
``promtool test rules`` on the chart's own rules file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

#: (dependency, state, value) of each series: payments open, ledger half-open, mail closed.
SERIES = [
    ("payments", "open", 1),
    ("payments", "closed", 0),
    ("ledger", "half_open", 1),
    ("ledger", "open", 0),
    ("mail", "closed", 1),
]

RULES = Path(__file__).resolve().parents[3] / "charts/sundial/files/prometheus-rules.yaml"

TEST = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
{series}    alert_rule_test:
      - eval_time: 3m
        alertname: SundialCircuitOpen
        exp_alerts: []
      - eval_time: 6m
        alertname: SundialCircuitOpen
        exp_alerts:
          - exp_labels: {{severity: warning, namespace: ns, dependency: payments}}
            exp_annotations:
              summary: The circuit of dependency payments is open
              description: >-
                Runs of this dependency wait instead of running; the ScheduledJobs naming it
                are Degraded (CircuitOpen).
"""


def test_the_circuit_alert_fires_for_an_open_circuit_only(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    test_file = tmp_path / "circuit_test.yaml"
    series = "".join(
        f'      - series: \'sundial_circuit_state{{namespace="ns",dependency="{dependency}",'
        f"sundial_circuit_state=\"{state}\"}}'\n        values: '{value}x10'\n"
        for dependency, state, value in SERIES
    )
    test_file.write_text(TEST.format(rules=RULES, series=series))
    result = subprocess.run(
        [promtool, "test", "rules", str(test_file)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
