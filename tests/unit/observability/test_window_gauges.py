"""The maintainer's window gauges: exactly the last snapshot, with a bounded number of jobs."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from sundial.observability import maintainer_metrics


def test_a_snapshot_replaces_every_series() -> None:
    registry = CollectorRegistry()
    gauge = maintainer_metrics.WindowGauge(
        "sundial_test_window", "Test.", ["reason"], registry=registry
    )
    gauge.set({("exception",): 3, ("timeout",): 1})
    assert registry.get_sample_value("sundial_test_window", {"reason": "timeout"}) == 1
    gauge.set({("exception",): 4})
    assert registry.get_sample_value("sundial_test_window", {"reason": "timeout"}) is None
    assert registry.get_sample_value("sundial_test_window", {"reason": "exception"}) == 4
    gauge.clear()
    assert registry.get_sample_value("sundial_test_window", {"reason": "exception"}) is None
    with pytest.raises(ValueError, match=r"takes labels \('reason',\)"):
        gauge.set({("a", "b"): 1})


def test_capped_keeps_the_busiest_and_sums_the_rest_under_other() -> None:
    counts = {
        ("ns", "a", "completed"): 5,
        ("ns", "a", "failed"): 1,
        ("ns", "b", "failed"): 2,
        ("ns", "c", "failed"): 3,
        ("ns", "c", "completed"): 1,
    }
    kept = maintainer_metrics.capped(counts, key=1, limit=1, other=("", "(other)"))
    assert kept == {
        ("ns", "a", "completed"): 5,
        ("ns", "a", "failed"): 1,
        ("", "(other)", "failed"): 5,
        ("", "(other)", "completed"): 1,
    }
    assert maintainer_metrics.capped(counts, key=1, limit=10, other=("", "x")) == counts
