"""The runner's Prometheus metrics: names, units and labels, defined once.

Conventions (docs/design.md): every name starts with ``sundial_``, values are in base
units (seconds, not milliseconds), and label values come from bounded sets: executor names,
outcome statuses, registered handler names, declared dependency names. Never a run id.

Each ``RunnerMetrics`` owns its ``CollectorRegistry`` so that tests, and two runners in one
process, do not collide in the global default registry.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Iterator

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram
from prometheus_client.core import HistogramMetricFamily, Metric

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

#: The states of ``sundial_circuit_state``, as ``runner.breaker.State`` spells them.
CIRCUIT_STATES = ("closed", "half_open", "open")

SCHEDULE_LAG_NAME = "sundial_schedule_lag_seconds"
SCHEDULE_LAG_HELP = "How late a run started, by queue: started_at - run_at."


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
        # Observed once per claimed run, by queue: a lock-free histogram (see LoopHistogram).
        # Each run is started by one process, so the sum over runners (and pod launchers,
        # pod_metrics) is the installation's lag, counted once.
        self.schedule_lag = LoopHistogram(
            SCHEDULE_LAG_NAME,
            SCHEDULE_LAG_HELP,
            registry=r,
            buckets=LATENCY_BUCKETS,
            label="queue",
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
        self.lease_extensions = Counter(
            "sundial_lease_extensions",
            "Leases extended by heartbeats (attempts that end within a third of their lease "
            "are never heartbeated).",
            registry=r,
        )
        self.process_crashes = Counter(
            "sundial_process_crashes",
            "Worker processes a handler killed (os._exit, signal, OOM).",
            ["handler"],
            registry=r,
        )
        self.retries_deferred = Counter(
            "sundial_retries_deferred",
            "Retries deferred past the retry budget's window because the dependency's budget "
            "of quick retries was spent (the failure still counts against maxRetries).",
            ["dependency"],
            registry=r,
        )
        self.retry_budget_remaining = Gauge(
            "sundial_retry_budget_remaining",
            "Quick retries left in the dependency's retry budget for the current window, as of "
            "the last failure.",
            ["dependency"],
            registry=r,
        )
        # An Enum, not a number per state: one series per state, 1 for the current one, so
        # `sundial_circuit_state{sundial_circuit_state="open"} == 1` needs no legend. It
        # replaced a Gauge of the same name (0 closed, 1 half-open, 2 open; ADR 0035). Set on
        # each transition of a breaker (runner.circuits), not per job.
        self.circuit_state = Enum(
            "sundial_circuit_state",
            "Circuit breaker state per declared dependency in this runner.",
            ["dependency"],
            states=list(CIRCUIT_STATES),
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
        """``state``: closed, half_open or open (a ValueError names the states otherwise)."""
        if state not in CIRCUIT_STATES:
            raise ValueError(f"circuit state {state!r} is not one of {', '.join(CIRCUIT_STATES)}")
        self.circuit_state.labels(dependency=dependency).state(state)

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


class LoopHistogram:
    """A histogram observed only from the runner's event loop thread, exposed like any other.

    ``prometheus_client.Histogram.observe`` takes a lock twice (sum, bucket) and walks the
    buckets in Python: about 1.2 µs, observed once per claimed run, which was several per
    cent of a no-op job (ADR 0012). This one bisects the bounds and adds to plain integers;
    a scrape (the health server, on the same loop) reads them. Do not observe from threads.

    With ``label``, each ``observe`` names that label's value (a queue: a bounded set, the
    runner's own ``--queue`` list): one dict look-up more.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        *,
        buckets: Iterable[float],
        registry: CollectorRegistry,
        label: str | None = None,
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._label = label
        bounds = sorted(float(b) for b in buckets)
        if not bounds or bounds[-1] != math.inf:
            bounds.append(math.inf)
        self._bounds = bounds
        # label value ("" without a label) -> [counts per bound..., sum]
        self._series: dict[str, list[float]] = {}
        registry.register(self)

    def observe(self, value: float, label_value: str = "") -> None:
        series = self._series.get(label_value)
        if series is None:
            series = self._series[label_value] = [0] * (len(self._bounds) + 1)
        series[bisect.bisect_left(self._bounds, value)] += 1
        series[-1] += value

    def collect(self) -> Iterator[Metric]:
        labels = [self._label] if self._label is not None else None
        family = HistogramMetricFamily(self._name, self._documentation, labels=labels)
        for label_value, series in sorted(self._series.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip(self._bounds, series, strict=False):
                cumulative += count
                buckets.append(("+Inf" if bound == math.inf else repr(bound), cumulative))
            family.add_metric([label_value] if labels else [], buckets, series[-1])
        yield family

    def describe(self) -> Iterator[Metric]:
        labels = [self._label] if self._label is not None else None
        yield HistogramMetricFamily(self._name, self._documentation, labels=labels)


CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
