from __future__ import annotations

import pytest

from sundial.runner import breaker, outcomes


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


POLICY = breaker.BreakerPolicy(
    failure_rate_threshold=0.5, window_seconds=60, min_calls=4, open_seconds=30, half_open_probes=1
)


def tripped(clock: FakeClock) -> breaker.CircuitBreaker:
    circuit = breaker.CircuitBreaker(POLICY, clock=clock)
    for _ in range(4):
        assert circuit.admit().allowed
        circuit.record_failure()
    assert circuit.state is breaker.State.OPEN
    return circuit


def test_stays_closed_below_min_calls_even_if_all_fail() -> None:
    circuit = breaker.CircuitBreaker(POLICY, clock=FakeClock())
    for _ in range(3):
        circuit.record_failure()
    assert circuit.state is breaker.State.CLOSED
    assert circuit.admit().verdict is breaker.Verdict.ALLOW


def test_stays_closed_below_the_failure_rate() -> None:
    circuit = breaker.CircuitBreaker(POLICY, clock=FakeClock())
    for ok in (True, True, False, True, True, False, True):
        circuit.record_success() if ok else circuit.record_failure()
    assert circuit.failure_rate() == pytest.approx(2 / 7)
    assert circuit.state is breaker.State.CLOSED


def test_opens_past_the_threshold_and_runs_wait_instead_of_failing() -> None:
    clock = FakeClock()
    circuit = tripped(clock)
    clock.advance(10)
    admission = circuit.admit()
    assert admission.verdict is breaker.Verdict.WAIT and not admission.allowed
    assert admission.retry_after_seconds == pytest.approx(20)


def test_old_failures_leave_the_window() -> None:
    clock = FakeClock()
    circuit = breaker.CircuitBreaker(POLICY, clock=clock)
    for _ in range(3):
        circuit.record_failure()
    clock.advance(61)
    circuit.record_failure()
    assert circuit.state is breaker.State.CLOSED


def test_half_open_after_cool_down_admits_limited_probes_then_closes_on_success() -> None:
    clock = FakeClock()
    circuit = tripped(clock)
    clock.advance(30)
    assert circuit.state is breaker.State.HALF_OPEN
    assert circuit.admit().verdict is breaker.Verdict.PROBE
    assert circuit.admit().verdict is breaker.Verdict.WAIT  # one probe at a time
    circuit.record_success()
    assert circuit.state is breaker.State.CLOSED
    assert circuit.admit().verdict is breaker.Verdict.ALLOW


def test_a_failed_probe_reopens_for_a_full_cool_down() -> None:
    clock = FakeClock()
    circuit = tripped(clock)
    clock.advance(31)
    assert circuit.admit().verdict is breaker.Verdict.PROBE
    circuit.record_failure()
    assert circuit.state is breaker.State.OPEN
    assert circuit.admit().retry_after_seconds == pytest.approx(30)


def test_breakers_are_per_dependency() -> None:
    clock = FakeClock()
    breakers = breaker.Breakers(POLICY, clock=clock)
    for _ in range(4):
        breakers["payments-api"].record_failure()
    assert breakers["payments-api"].state is breaker.State.OPEN
    assert breakers["search"].state is breaker.State.CLOSED
    assert breakers.states() == {"payments-api": "open", "search": "closed"}


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="failure_rate_threshold"):
        breaker.BreakerPolicy(failure_rate_threshold=0)
    with pytest.raises(ValueError, match="min_calls"):
        breaker.BreakerPolicy(min_calls=0)


def test_only_outcomes_that_speak_about_the_dependency_count() -> None:
    circuit = breaker.CircuitBreaker(POLICY, clock=FakeClock())
    for _ in range(4):
        circuit.record(outcomes.Failed("bad", outcomes.FailureDetail.BAD_ARGS))
        circuit.record(outcomes.Cancelled())
        circuit.record(outcomes.Crashed("segfault"))
    assert circuit.state is breaker.State.CLOSED
    for _ in range(2):
        circuit.record(outcomes.Failed("503 from payments-api"))
        circuit.record(outcomes.TimedOut("slow", 5.0))
    assert circuit.state is breaker.State.OPEN


def test_an_uninformative_probe_frees_its_slot() -> None:
    clock = FakeClock()
    circuit = tripped(clock)
    clock.advance(30)
    assert circuit.admit().verdict is breaker.Verdict.PROBE
    circuit.record(outcomes.Cancelled())
    assert circuit.admit().verdict is breaker.Verdict.PROBE
    circuit.record(outcomes.Succeeded())
    assert circuit.state is breaker.State.CLOSED


def test_transitions_are_reported_once_each_and_calls_are_not() -> None:
    clock = FakeClock()
    seen: list[tuple[str, breaker.State]] = []
    breakers = breaker.Breakers(POLICY, clock=clock, on_transition=lambda *t: seen.append(t))
    circuit = breakers["payments"]
    assert seen == [("payments", breaker.State.CLOSED)]  # created: a runner now calls it
    circuit.record_success()
    for _ in range(4):
        circuit.admit()
        circuit.record_failure()
    assert seen[1:] == [("payments", breaker.State.OPEN)]
    circuit.admit()  # waits: no transition
    clock.advance(30)
    assert circuit.admit().verdict is breaker.Verdict.PROBE
    circuit.record_failure()  # the probe failed
    clock.advance(30)
    circuit.admit()
    circuit.record_success()
    assert [state for _, state in seen[2:]] == [
        breaker.State.HALF_OPEN,
        breaker.State.OPEN,
        breaker.State.HALF_OPEN,
        breaker.State.CLOSED,
    ]
    assert breakers["payments"] is circuit and len(seen) == 6  # no new breaker, no report


def test_the_failure_rate_follows_calls_out_of_the_window() -> None:
    clock = FakeClock()
    circuit = breaker.CircuitBreaker(POLICY, clock=clock)
    circuit.record_failure()
    circuit.record_failure()
    clock.advance(40)
    circuit.record_success()
    assert circuit.failure_rate() == pytest.approx(2 / 3)
    clock.advance(30)  # the two failures leave the 60 s window, the success stays
    assert circuit.failure_rate() == 0.0
    circuit.record_failure()
    assert circuit.failure_rate() == pytest.approx(1 / 2)
    assert circuit.state is breaker.State.CLOSED  # 2 calls: below min_calls
