"""Every error the run store raises on purpose, in one hierarchy under ``SundialError``.

Bad input is rejected before anything is written (or inside a transaction that is rolled
back), so after any of these nothing stored has changed. psycopg's errors stop at the store's
edge (``pool.Pool.connection``): a lost or refused connection becomes
``StoreUnavailableError`` (retry later), any other refused statement ``StatementError`` (a
bug, or a constraint the caller broke), each with psycopg's error as ``__cause__``::

    StoreError (SundialError)
    ├── MigrationError                  a migration failed or an applied one was edited
    ├── StoreUnavailableError           PostgreSQL is unreachable or dropped the connection
    ├── StatementError                  PostgreSQL refused a statement
    │   └── PermissionDeniedError       the login's role lacks the grant the statement needs
    ├── NoSuchRunError (LookupError)    no run, live or archived, has that id
    ├── RunNotReplayableError           the run exists, but its state does not allow a replay
    └── InvalidSubmissionError          the caller asked for something the store refuses
        ├── UnknownJobError             no active job definition by that id or name
        ├── ArgsTooLargeError           args larger than api.validate.MAX_ARGS_BYTES
        ├── InvalidPriorityError        priority outside MIN_PRIORITY..MAX_PRIORITY
        ├── RefusedValueError           PostgreSQL refused a value (NUL, out of range)
        ├── QuotaExceededError          the namespace holds as many active runs as it may
        ├── DependencyError
        │   ├── MissingDependencyError  depends_on names a run that does not exist
        │   └── CyclicDependencyError   a submitted graph has a cycle
        └── IdempotencyConflictError    the key was used before with different args

Messages say what was wrong and what to do about it. ``LeaseLost`` is not an error: heartbeat
and finish report it per run in their results, because it is a normal outcome of a partition.
"""

from __future__ import annotations

from sundial import errors as sundial_errors
from sundial.api import validate

__all__ = [
    "ArgsTooLargeError",
    "CyclicDependencyError",
    "DependencyError",
    "EpochChangedError",
    "HotQueueModeError",
    "HotQueueUnavailableError",
    "IdempotencyConflictError",
    "InvalidDsnError",
    "InvalidPriorityError",
    "InvalidSubmissionError",
    "LoginNamespacesError",
    "MigrationError",
    "MissingDependencyError",
    "NameTakenError",
    "NoSuchRunError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "RefusedValueError",
    "RunNotReplayableError",
    "SchemaMismatchError",
    "StatementError",
    "StoreError",
    "StoreUnavailableError",
    "UnknownJobError",
]


class StoreError(sundial_errors.SundialError):
    """Base of every error raised on purpose by ``sundial.store``."""


class MigrationError(StoreError):
    """A migration could not be applied, or one already applied was changed afterwards."""


class SchemaMismatchError(StoreError):
    """This Sundial cannot run against the database's schema: the schema is behind (run
    ``sundial migrate``) or a newer release migrated it past what this code can use (run that
    release). The message says which, and the versions on both sides."""


class LoginNamespacesError(StoreError):
    """The database login is kept to namespaces (``sundial migrate --login-namespaces``) that
    do not cover what the process was told to serve: it would wait on runs it cannot see.
    The message names the login, both lists and the change that fixes it."""


class StoreUnavailableError(StoreError):
    """PostgreSQL cannot be reached, restarted, failed over or closed the connection.

    Transient by nature: wait and try again (``reconnect.Backoff``). Leases are time-based, so
    a caller that reconnects within its lease loses nothing."""


class HotQueueUnavailableError(StoreUnavailableError):
    """The hot queue's Redis cannot be reached, is loading its data or timed out: as
    transient as PostgreSQL's outages, and retried by the same loops."""


class HotQueueModeError(StoreError):
    """A process's hot-queue setting disagrees with the database's (the outbox on or off):
    it does not start, and the message says which to change."""


class EpochChangedError(StoreError):
    """The hot queue's Redis holds no epoch for the server it now is (a failover or a restart
    since the claimer's epoch was set): take a new epoch from PostgreSQL and set it."""

    def __init__(self, held: str, current: str | None) -> None:
        super().__init__(
            f"the hot queue's epoch changed: this claimer holds {held}, the server "
            f"{'has ' + current if current else 'has none for the server it now is'}"
        )
        self.current = current


class InvalidDsnError(StoreError, ValueError):
    """The DSN given is not a libpq connection string or URL; nothing was tried."""


class StatementError(StoreError):
    """PostgreSQL refused a statement for a reason other than the connection: a constraint
    or a bug. Retrying the same statement will fail the same way."""


class PermissionDeniedError(StatementError):
    """The login's role may not do what the statement does (each component connects as its own
    role: ``sundial migrate --login``); the message names the table or function refused."""


class NoSuchRunError(StoreError, LookupError):
    def __init__(self, run_id: int) -> None:
        super().__init__(f"there is no run {run_id}: check the id (`sundial runs` lists them)")
        self.run_id = run_id


class RunNotReplayableError(StoreError):
    def __init__(self, run_id: int, state: str) -> None:
        super().__init__(
            f"run {run_id} cannot be replayed: it is {state}; only dead_lettered, failed or "
            "timed_out runs still in the live table can be replayed (submit archived ones again)"
        )
        self.run_id = run_id
        self.state = state


class InvalidSubmissionError(StoreError, ValueError):
    """A submission was refused; nothing was stored."""


class NameTakenError(InvalidSubmissionError):
    """A ScheduledJob's name is held in its namespace by another active job: one active
    definition owns a name, so its schedule is not stored.

    ``by_schedule``: the holder is another ScheduledJob's schedule (one deleted whose
    deactivation has not been stored yet: try again later); otherwise a job defined with
    ``sundial.client``, which holds the name until it is gone."""

    def __init__(self, namespace: str, name: str, *, by_schedule: bool) -> None:
        if by_schedule:
            holder = "a ScheduledJob of that name not yet deactivated"
            advice = "it is stored once that one's deletion is"
        else:
            holder = "one defined from Python with sundial.client"
            advice = "give this ScheduledJob another name, or apply it in another namespace"
        super().__init__(
            f"the job name {name!r} in namespace {namespace!r} belongs to another active job"
            f" ({holder}): {advice}; nothing was stored"
        )
        self.namespace = namespace
        self.name = name
        self.by_schedule = by_schedule


class UnknownJobError(InvalidSubmissionError):
    def __init__(self, job: str) -> None:
        super().__init__(
            f"no active job definition {job!r}: apply its ScheduledJob first, or check the "
            "job id / 'namespace/name' you passed"
        )
        self.job = job


class ArgsTooLargeError(InvalidSubmissionError, validate.ArgsTooLargeError):
    """A submission refused for its ``args``' size: a refused submission (nothing stored) and
    the API's ``ArgsTooLargeError``, so a caller catches it as either."""

    def __init__(self, size: int, limit: int = validate.MAX_ARGS_BYTES) -> None:
        super().__init__(validate.too_large(size, limit))
        self.size = size
        self.limit = limit


class InvalidPriorityError(InvalidSubmissionError):
    def __init__(self, priority: object, lowest: int, highest: int) -> None:
        super().__init__(
            f"priority {priority!r} is invalid: use an integer from {lowest} (lowest) "
            f"to {highest} (most urgent)"
        )
        self.priority = priority


class RefusedValueError(InvalidSubmissionError):
    """PostgreSQL refused a value (a NUL character, a number out of range, bad encoding).

    A backstop: the models refuse such values first (docs/adr/0015), so this means a caller
    that bypassed them. The write was rolled back; nothing was stored."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"PostgreSQL refused a value: {detail}; remove NUL characters and keep numbers"
            " within range (parse the manifest with sundial.api to find the field)"
        )
        self.detail = detail


class QuotaExceededError(InvalidSubmissionError):
    """The runs would take their namespace past its quota of active runs (ADR 0063).

    Not a bad request, a full one: the same submission succeeds once enough of the
    namespace's runs have ended (the count is refreshed by the maintenance pass)."""

    def __init__(self, namespace: str, quota: int, active: int, added: int) -> None:
        super().__init__(
            f"namespace {namespace} may hold {quota} active runs and holds {active}; these "
            f"{added} would pass its quota: wait for some to end, or ask the platform team to "
            "raise it (operator.quotas.activeRuns)"
        )
        self.namespace = namespace
        self.quota = quota
        self.active = active
        self.added = added

    @classmethod
    def from_detail(cls, detail: str) -> QuotaExceededError:
        """From the trigger's ``namespace|quota|active|added``."""
        namespace, quota, active, added = detail.rsplit("|", 3)
        return cls(namespace, int(quota), int(active), int(added))


class DependencyError(InvalidSubmissionError):
    """depends_on cannot be satisfied."""


class MissingDependencyError(DependencyError):
    def __init__(self, missing: list[int]) -> None:
        super().__init__(
            f"depends_on names runs that do not exist: {sorted(missing)}; submit the "
            "upstream runs first and pass the ids they returned"
        )
        self.missing = missing


class CyclicDependencyError(DependencyError):
    def __init__(self, cycle: list[str]) -> None:
        super().__init__(
            f"the dependency graph has a cycle: {' -> '.join(cycle)}; remove one of these "
            "edges so every run can eventually start"
        )
        self.cycle = cycle


class IdempotencyConflictError(InvalidSubmissionError):
    def __init__(self, key: str, run_id: int) -> None:
        super().__init__(
            f"idempotency key {key!r} was already used for run {run_id} with different "
            "args: reuse a key only to retry the same submission, or pick a new key"
        )
        self.key = key
        self.run_id = run_id
