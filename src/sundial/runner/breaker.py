"""Circuit breakers per declared dependency (the retry budget is in ``retry_budgets``).

When a downstream (``dependency="payments-api"``) fails for everyone at once, retrying each
job on its own backoff turns the recovery into a thundering herd. A breaker watches the
failure rate of calls to one dependency:

    CLOSED ──(failure rate ≥ threshold over the window, at least min_calls)──▶ OPEN
    OPEN ──(open_seconds pass)──▶ HALF_OPEN: up to half_open_probes calls go through
    HALF_OPEN ──(a probe succeeds)──▶ CLOSED      HALF_OPEN ──(a probe fails)──▶ OPEN

While a breaker is open ``admit()`` answers ``WAIT`` with how long to wait: the claim loop puts
the run in RetryWait (not Failed, and without spending an attempt). Pure logic: time comes
from an injected monotonic clock, so tests drive it by hand.
"""

from __future__ import annotations

import collections
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from sundial.runner import outcomes

Clock = Callable[[], float]


class State(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    PROBE = "probe"
    """Allowed as one of the half-open trial calls; report its result like any other."""
    WAIT = "wait"


@dataclass(frozen=True)
class Admission:
    verdict: Verdict
    retry_after_seconds: float = 0.0

    @property
    def allowed(self) -> bool:
        return self.verdict is not Verdict.WAIT


@dataclass(frozen=True)
class BreakerPolicy:
    failure_rate_threshold: float = 0.5
    window_seconds: float = 60.0
    min_calls: int = 10
    open_seconds: float = 30.0
    half_open_probes: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < self.failure_rate_threshold <= 1.0:
            raise ValueError("failure_rate_threshold must be in (0, 1]")
        if self.window_seconds <= 0 or self.open_seconds <= 0:
            raise ValueError("window_seconds and open_seconds must be > 0")
        if self.min_calls < 1 or self.half_open_probes < 1:
            raise ValueError("min_calls and half_open_probes must be >= 1")


class CircuitBreaker:
    def __init__(
        self,
        policy: BreakerPolicy | None = None,
        *,
        clock: Clock = time.monotonic,
        on_transition: Callable[[State], None] | None = None,
    ):
        self.policy = policy or BreakerPolicy()
        self._clock = clock
        self._on_transition = on_transition
        self._state = State.CLOSED
        self._calls: collections.deque[tuple[float, bool]] = collections.deque()
        # Failures among _calls, counted as calls enter and leave the window: the failure rate
        # is read on every recorded call, and summing the window each time cost O(calls in the
        # window) per job (bench/runner_throughput.py --handler bench.noop_dependency, 10,000
        # jobs: the runner's CPU per job went from 75-84 µs to 30-36, as without a dependency).
        self._failures = 0
        self._opened_at = 0.0
        self._probes_in_flight = 0

    @property
    def state(self) -> State:
        self._advance()
        return self._state

    def admit(self) -> Admission:
        """May a call to the dependency start now? Every allowed call must be recorded."""
        self._advance()
        if self._state is State.CLOSED:
            return Admission(Verdict.ALLOW)
        if self._state is State.HALF_OPEN and self._probes_in_flight < self.policy.half_open_probes:
            self._probes_in_flight += 1
            return Admission(Verdict.PROBE)
        if self._state is State.OPEN:
            wait = self._opened_at + self.policy.open_seconds - self._clock()
        else:  # half-open with every probe slot taken: check back soon
            wait = self.policy.open_seconds / 10
        return Admission(Verdict.WAIT, max(wait, 0.0))

    def record_success(self) -> None:
        self._record(ok=True)

    def record_failure(self) -> None:
        self._record(ok=False)

    def record(self, outcome: outcomes.Outcome) -> None:
        """Record an attempt's outcome, counting only what says something about the
        dependency: success, a handler error or a timeout. Cancellations, bad args, unknown
        handlers and process crashes are the job's business, not the downstream's.
        """
        verdict = says_about_dependency(outcome)
        if verdict is True:
            self.record_success()
        elif verdict is False:
            self.record_failure()
        elif self._state is State.HALF_OPEN:
            # A probe that told us nothing frees its slot for another probe.
            self._probes_in_flight = max(self._probes_in_flight - 1, 0)

    def failure_rate(self) -> float:
        self._prune()
        if not self._calls:
            return 0.0
        return self._failures / len(self._calls)

    def _record(self, *, ok: bool) -> None:
        self._advance()
        now = self._clock()
        if self._state is State.HALF_OPEN:
            self._probes_in_flight = max(self._probes_in_flight - 1, 0)
            if ok:
                self._close()
            else:
                self._open(now)
            return
        if self._state is State.OPEN:
            return  # a call admitted before the trip; the verdict is already in
        self._calls.append((now, ok))
        if not ok:
            self._failures += 1
        self._prune()
        if len(self._calls) >= self.policy.min_calls and (
            self.failure_rate() >= self.policy.failure_rate_threshold
        ):
            self._open(now)

    def _advance(self) -> None:
        if (
            self._state is State.OPEN
            and self._clock() >= self._opened_at + self.policy.open_seconds
        ):
            self._state = State.HALF_OPEN
            self._probes_in_flight = 0
            self._transitioned()

    def _open(self, now: float) -> None:
        self._state = State.OPEN
        self._opened_at = now
        self._calls.clear()
        self._failures = 0
        self._probes_in_flight = 0
        self._transitioned()

    def _close(self) -> None:
        self._state = State.CLOSED
        self._calls.clear()
        self._failures = 0
        self._probes_in_flight = 0
        self._transitioned()

    def _transitioned(self) -> None:
        if self._on_transition is not None:
            self._on_transition(self._state)

    def _prune(self) -> None:
        horizon = self._clock() - self.policy.window_seconds
        while self._calls and self._calls[0][0] < horizon:
            if not self._calls.popleft()[1]:
                self._failures -= 1


def says_about_dependency(outcome: outcomes.Outcome) -> bool | None:
    """True: the dependency worked; False: it may have failed; None: no information."""
    match outcome:
        case outcomes.Succeeded():
            return True
        case outcomes.TimedOut():
            return False
        case outcomes.Failed(detail=outcomes.FailureDetail.HANDLER_ERROR):
            return False
        case _:
            return None


class Breakers:
    """One breaker per dependency name, created on first use with a shared policy.

    ``on_transition(dependency, state)`` is called with CLOSED when a breaker is created and
    then on each of its transitions (see the module docstring)."""

    def __init__(
        self,
        policy: BreakerPolicy | None = None,
        *,
        clock: Clock = time.monotonic,
        on_transition: Callable[[str, State], None] | None = None,
    ):
        self._policy = policy or BreakerPolicy()
        self._clock = clock
        self._on_transition = on_transition
        self._breakers: dict[str, CircuitBreaker] = {}

    def __getitem__(self, dependency: str) -> CircuitBreaker:
        breaker = self._breakers.get(dependency)
        if breaker is None:
            breaker = self._breakers[dependency] = self._create(dependency)
        return breaker

    def _create(self, dependency: str) -> CircuitBreaker:
        report = self._on_transition
        if report is None:
            return CircuitBreaker(self._policy, clock=self._clock)
        created = CircuitBreaker(
            self._policy, clock=self._clock, on_transition=lambda state: report(dependency, state)
        )
        report(dependency, State.CLOSED)
        return created

    def states(self) -> dict[str, State]:
        return {name: breaker.state for name, breaker in self._breakers.items()}
