"""Why an unfinished run that is not running waits: one reason and one sentence.

The one place that answers it. ``sundial runs`` (its ``WAITING`` column and ``waiting`` key)
and the operator (a JobRun's ``status.waiting`` and its Reconciling condition) both call
:func:`why` on the facts the store reads with the run (``store.history``: the run's row, its
unfinished upstream runs, ``job_runs.unclaimable_reason``).

Pure and without a clock: every sentence names absolute times ("until 12:30:05Z"), never
"in 3 minutes", so the same facts give the same words and the operator writes a JobRun's
status only when the reason itself changes.

:data:`RULES` is asked in order and the first that answers wins. A new reason is one entry
there: a function from :class:`WaitFacts` to a :class:`Waiting` or None (plus, if it needs a
fact the row does not carry, one field on ``WaitFacts`` that the store fills).

The runner writes two of these facts as sentences into ``last_error`` when it hands a run
back (a spent retry budget, an open circuit breaker); the sentences are made here
(:func:`retry_budget_note`, :func:`circuit_open_note`) so that writing and reading them
cannot drift apart.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sundial.scheduling.run_state import RunState, coerce_state

__all__ = [
    "RULES",
    "WAITING_STATES",
    "Upstream",
    "WaitFacts",
    "WaitReason",
    "Waiting",
    "circuit_open_note",
    "retry_budget_note",
    "why",
]

#: The states in which a run waits: unfinished and not running.
WAITING_STATES: frozenset[RunState] = frozenset(
    {RunState.SCHEDULED, RunState.BLOCKED, RunState.PENDING, RunState.RETRY_WAIT}
)

#: At most this many unfinished upstream runs are named in a sentence (the count is exact).
MAX_UPSTREAM_NAMED = 3


class WaitReason(enum.StrEnum):
    """Why a run waits, as a JobRun condition's ``reason`` and ``sundial runs -o json`` give it.

    Also members of ``api.conditions.ConditionReason`` (a test checks)."""

    UNCLAIMABLE = "Unclaimable"
    """Pending, and no live runner serves its queue, handler or execution model."""
    WAITING_FOR_UPSTREAM = "WaitingForUpstream"
    """Blocked: upstream runs it depends on have not completed."""
    RETRY_BUDGET_SPENT = "RetryBudgetSpent"
    """Waiting to retry later than its backoff: its dependency's retry budget was spent."""
    CIRCUIT_OPEN = "CircuitOpen"
    """Handed back because its dependency's circuit breaker was open; it retries later."""
    RETRY_BACKOFF = "RetryBackoff"
    """An attempt failed; it waits out its backoff before the next attempt."""
    CONCURRENCY_LIMIT = "ConcurrencyLimit"
    """Due, but its concurrency key's runs pending or running are at the key's limit."""
    RUN_AT_IN_FUTURE = "RunAtInFuture"
    """Scheduled: its ``run_at`` (a delay, a spread, a fire time) has not come yet."""
    WAITING_FOR_RUNNER = "WaitingForRunner"
    """Pending and claimable: it waits for a free slot of a runner serving its queue."""


@dataclass(frozen=True)
class Upstream:
    """An unfinished run another run depends on."""

    run_id: int
    job: str  # namespace/name
    state: RunState

    def __post_init__(self) -> None:
        coerce_state(self)


@dataclass(frozen=True)
class WaitFacts:
    """What the store knows about a run that bears on why it waits."""

    run_id: int
    state: RunState
    attempt: int = 0
    queue: str | None = None
    run_at: datetime | None = None
    #: ``job_runs.unclaimable_reason``: why no live runner can claim it (``store.runners``).
    unclaimable_reason: str | None = None
    last_error: str | None = None
    failure_reason: str | None = None
    pending_dependencies: int = 0
    #: Its unfinished upstream runs, lowest id first (at most a few; the count is above).
    upstream: tuple[Upstream, ...] = ()
    #: The concurrency key holding it back: set by the store only for a due run that waits
    #: for its key (the store has the clock; this module has none).
    held_by_key: str | None = None

    def __post_init__(self) -> None:
        coerce_state(self)


@dataclass(frozen=True)
class Waiting:
    reason: WaitReason
    message: str


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "an unknown time"
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# The runner's notes in last_error, written and read here.
_RETRY_BUDGET = re.compile(
    r"retry deferred by \d+s: the retry budget of dependency (?P<dependency>'[^\n]*?'|\"[^\n]*?\")"
    r" \((?P<budget>[^)\n]*)\) is spent"
)
_CIRCUIT_OPEN = re.compile(
    r"^circuit breaker for dependency (?P<dependency>'[^\n]*?'|\"[^\n]*?\") is open"
)


def retry_budget_note(
    delay_seconds: float, dependency: str, max_retries: int, window: float
) -> str:
    """The line the runner appends to ``last_error`` when it defers a retry over budget."""
    return (
        f"retry deferred by {delay_seconds:.0f}s: the retry budget of dependency {dependency!r} "
        f"({max_retries} retries per {window:g}s in this runner) is spent"
    )


def circuit_open_note(dependency: str) -> str:
    """The ``last_error`` of a run the runner hands back because its circuit is open."""
    return f"circuit breaker for dependency {dependency!r} is open"


def _unclaimable(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.PENDING or not facts.unclaimable_reason:
        return None
    return Waiting(WaitReason.UNCLAIMABLE, facts.unclaimable_reason)


def _upstream(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.BLOCKED:
        return None
    count = max(facts.pending_dependencies, len(facts.upstream))
    named = ", ".join(
        f"run {u.run_id} ({u.job}, {u.state})" for u in facts.upstream[:MAX_UPSTREAM_NAMED]
    )
    more = count - min(len(facts.upstream), MAX_UPSTREAM_NAMED)
    if named and more > 0:
        named += f" and {more} more"
    runs = "run" if count == 1 else "runs"
    message = f"waits for {count} upstream {runs} to complete"
    return Waiting(WaitReason.WAITING_FOR_UPSTREAM, f"{message}: {named}" if named else message)


def _retry_budget(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.RETRY_WAIT or not facts.last_error:
        return None
    found = _RETRY_BUDGET.search(facts.last_error)
    if found is None:
        return None
    return Waiting(
        WaitReason.RETRY_BUDGET_SPENT,
        f"retry deferred until {_when(facts.run_at)}: the retry budget of dependency"
        f" {found['dependency']} ({found['budget']}) is spent",
    )


def _circuit_open(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.RETRY_WAIT or not facts.last_error:
        return None
    found = _CIRCUIT_OPEN.search(facts.last_error)
    if found is None:
        return None
    return Waiting(
        WaitReason.CIRCUIT_OPEN,
        f"the circuit breaker of dependency {found['dependency']} was open; the run was handed"
        f" back without spending a retry and is due again at {_when(facts.run_at)}",
    )


def _backoff(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.RETRY_WAIT:
        return None
    failed = f"attempt {facts.attempt} failed" if facts.attempt else "an attempt failed"
    if facts.failure_reason:
        failed += f" ({facts.failure_reason})"
    return Waiting(
        WaitReason.RETRY_BACKOFF,
        f"{failed}; it retries after its backoff, at {_when(facts.run_at)}",
    )


def _concurrency_limit(facts: WaitFacts) -> Waiting | None:
    if facts.held_by_key is None or facts.state not in (RunState.SCHEDULED, RunState.RETRY_WAIT):
        return None
    return Waiting(
        WaitReason.CONCURRENCY_LIMIT,
        f"due; waits for room under concurrency key {facts.held_by_key!r}: as many of its runs"
        " as its limit allows are pending or running in the namespace",
    )


def _run_at(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.SCHEDULED:
        return None
    return Waiting(
        WaitReason.RUN_AT_IN_FUTURE,
        f"its run_at is {_when(facts.run_at)}; it is due then (a delay, runAt or spread)",
    )


def _waiting_for_runner(facts: WaitFacts) -> Waiting | None:
    if facts.state != RunState.PENDING:
        return None
    queue = f"queue {facts.queue!r}" if facts.queue else "its queue"
    return Waiting(
        WaitReason.WAITING_FOR_RUNNER, f"due; waits for a free slot of a runner serving {queue}"
    )


Rule = Callable[[WaitFacts], Waiting | None]

#: Asked in order; the first answer wins. A new reason is one entry (see the module docstring).
RULES: tuple[Rule, ...] = (
    _unclaimable,
    _upstream,
    _retry_budget,
    _circuit_open,
    _concurrency_limit,
    _backoff,
    _run_at,
    _waiting_for_runner,
)


def why(facts: WaitFacts) -> Waiting | None:
    """Why the run waits; None for a run that runs or has finished."""
    if facts.state not in WAITING_STATES:
        return None
    for rule in RULES:
        found = rule(facts)
        if found is not None:
            return found
    return None
