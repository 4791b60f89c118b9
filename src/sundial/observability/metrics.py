"""The runner's Prometheus metrics: names, units and labels, defined once.

Conventions (DESIGN.md section 8): every name starts with ``sundial_``, values are in base
units (seconds, not milliseconds), and label values come from bounded sets: executor names,
outcome statuses, registered handler names, declared dependency names. Never a run id.

Each ``RunnerMetrics`` owns its ``CollectorRegistry`` so that tests, and two runners in one
process, do not collide in the global default registry.
"""

from __future__ import annotations

from collections.abc import Callable

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# From sub-millisecond (healthy loop, fast claim) to a minute (a hot queue at :00).
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

CIRCUIT_STATE_VALUES = {"closed": 0, "half_open": 1, "open": 2}


class RunnerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.claim_latency = Histogram(
            "sundial_claim_latency_seconds",
            "Time one batched claim query took.",
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.schedule_lag = Histogram(
            "sundial_schedule_lag_seconds",
            "How late a run started: started_at - run_at.",
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.loop_lag = Histogram(
            "sundial_loop_lag_seconds",
            "How late a due callback ran on the runner's event loop.",
            registry=r,
            buckets=LATENCY_BUCKETS,
        )
        self.pool_size = Gauge(
            "sundial_pool_slots",
            "Slots an executor has (threads, processes or concurrent children).",
            ["executor"],
            registry=r,
        )
        self.pool_busy = Gauge(
            "sundial_pool_busy_slots",
            "Slots in use, leaked thread slots included.",
            ["executor"],
            registry=r,
        )
        self.leaked_thread_slots = Gauge(
            "sundial_leaked_thread_slots",
            "Thread slots still held by handlers whose attempt already timed out.",
            registry=r,
        )
        self.runs = Counter(
            "sundial_runs",
            "Attempts finished by this runner, by handler and outcome.",
            ["handler", "outcome"],
            registry=r,
        )
        self.process_crashes = Counter(
            "sundial_process_crashes",
            "Worker processes a handler killed (os._exit, signal, OOM).",
            ["handler"],
            registry=r,
        )
        self.circuit_state = Gauge(
            "sundial_circuit_state",
            "Circuit breaker state per dependency: 0 closed, 1 half-open, 2 open.",
            ["dependency"],
            registry=r,
        )

    def track_pool(
        self, executor: str, size: Callable[[], float], busy: Callable[[], float]
    ) -> None:
        """Read an executor's saturation at scrape time instead of pushing every change."""
        self.pool_size.labels(executor=executor).set_function(size)
        self.pool_busy.labels(executor=executor).set_function(busy)

    def track_leaked_thread_slots(self, leaked: Callable[[], float]) -> None:
        self.leaked_thread_slots.set_function(leaked)

    def record_outcome(self, handler: str, outcome: str) -> None:
        self.runs.labels(handler=handler, outcome=outcome).inc()

    def set_circuit_state(self, dependency: str, state: str) -> None:
        self.circuit_state.labels(dependency=dependency).set(CIRCUIT_STATE_VALUES[state])

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
