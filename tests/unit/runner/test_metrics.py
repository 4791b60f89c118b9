from __future__ import annotations

import pytest

from sundial.observability import metrics


def test_metrics_use_the_sundial_prefix_base_units_and_bounded_labels() -> None:
    runner_metrics = metrics.RunnerMetrics()
    runner_metrics.track_pool("thread", lambda: 8, lambda: 3)
    runner_metrics.track_leaked_thread_slots(lambda: 1)
    runner_metrics.record_outcome("reports.build", "timed_out")
    runner_metrics.loop_lag.observe(0.002)
    runner_metrics.set_circuit_state("payments-api", "half_open")
    text = runner_metrics.exposition().decode()
    assert 'sundial_pool_slots{executor="thread"} 8.0' in text
    assert 'sundial_pool_busy_slots{executor="thread"} 3.0' in text
    assert "sundial_leaked_thread_slots 1.0" in text
    assert 'sundial_runs_total{handler="reports.build",outcome="timed_out"} 1.0' in text
    assert "sundial_loop_lag_seconds_count 1.0" in text
    assert (
        'sundial_circuit_state{dependency="payments-api",sundial_circuit_state="half_open"} 1.0'
        in text
    )
    assert (
        'sundial_circuit_state{dependency="payments-api",sundial_circuit_state="open"} 0.0' in text
    )
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert names and all(name.startswith("sundial_") for name in names)


def test_a_circuit_state_the_breakers_do_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="'tripped' is not one of closed, half_open, open"):
        metrics.RunnerMetrics().set_circuit_state("payments-api", "tripped")


def test_two_runners_in_one_process_do_not_collide() -> None:
    metrics.RunnerMetrics()
    metrics.RunnerMetrics()


def test_schedule_lag_is_a_histogram_per_queue() -> None:
    runner_metrics = metrics.RunnerMetrics()
    registry = runner_metrics.registry
    runner_metrics.schedule_lag.observe(0.003, "default")
    runner_metrics.schedule_lag.observe(2.0, "default")
    runner_metrics.schedule_lag.observe(0.0002, "batch")

    def sample(suffix: str, queue: str, **labels: str) -> float | None:
        return registry.get_sample_value(
            f"sundial_schedule_lag_seconds_{suffix}", {"queue": queue, **labels}
        )

    assert sample("count", "default") == 2 and sample("sum", "default") == 2.003
    assert sample("bucket", "default", le="0.005") == 1
    assert sample("bucket", "default", le="2.5") == 2
    assert sample("bucket", "default", le="+Inf") == 2
    assert sample("count", "batch") == 1 and sample("bucket", "batch", le="0.0005") == 1
