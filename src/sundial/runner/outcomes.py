"""What happened to one attempt of a run: a small closed union the claim loop maps onto the store.

Every executor returns exactly one of ``Succeeded``, ``Failed``, ``TimedOut``, ``Crashed`` or
``Cancelled`` and never raises for anything the handler did. ``Outcome`` is their union, so a
``match`` over it is checked for exhaustiveness by mypy.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar

from sundial.attempt import finishes


class OutcomeStatus(enum.StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CRASHED = "crashed"
    CANCELLED = "cancelled"


class FailureDetail(enum.StrEnum):
    """What exactly ended an attempt that did not succeed, as the runner knows it.

    Finer than the failure class (``sundial.scheduling.failures.FailureClass``, the one word
    the retry rules key on, stored in ``failure_reason``): the claim loop maps each outcome to
    its class and hands the detail on, and the store keeps it in ``failure_detail``, so JobRun
    status (``reason``) and `sundial runs` show BadArgs or UnknownHandler, not only
    "permanent". Stable strings, also used as metric and log labels.
    """

    HANDLER_ERROR = "HandlerError"
    """The handler raised; ``error`` holds the traceback."""
    BAD_ARGS = "BadArgs"
    """The arguments did not validate against the handler's model; retrying will not help."""
    UNKNOWN_HANDLER = "UnknownHandler"
    """No handler of that name is registered in this runner; retrying here will not help."""
    TIMEOUT = finishes.TIMEOUT_DETAIL
    """The attempt ran past its timeout; the pod launcher's deadline gives the same word."""
    PROCESS_CRASHED = "ProcessCrashed"
    """The worker process running this handler died (os._exit, a signal, OOM)."""
    POOL_RESTARTED = "PoolRestarted"
    """Another job broke or timed out in the same process pool and took this one down with it;
    not this handler's fault, so it does not count towards its crash quarantine."""
    CANCELLED = "Cancelled"


@dataclass(frozen=True)
class Succeeded:
    status: ClassVar[OutcomeStatus] = OutcomeStatus.SUCCEEDED


@dataclass(frozen=True)
class Failed:
    error: str
    detail: FailureDetail = FailureDetail.HANDLER_ERROR
    status: ClassVar[OutcomeStatus] = OutcomeStatus.FAILED

    @property
    def retryable(self) -> bool:
        """Bad args and unknown handlers fail the same way on every attempt."""
        return self.detail not in (FailureDetail.BAD_ARGS, FailureDetail.UNKNOWN_HANDLER)


@dataclass(frozen=True)
class TimedOut:
    error: str
    timeout_seconds: float
    detail: ClassVar[FailureDetail] = FailureDetail.TIMEOUT
    status: ClassVar[OutcomeStatus] = OutcomeStatus.TIMED_OUT


@dataclass(frozen=True)
class Crashed:
    error: str
    detail: FailureDetail = FailureDetail.PROCESS_CRASHED
    status: ClassVar[OutcomeStatus] = OutcomeStatus.CRASHED

    @property
    def counts_as_crash(self) -> bool:
        """True when this handler itself killed its process (feeds quarantine-after-N)."""
        return self.detail is FailureDetail.PROCESS_CRASHED


@dataclass(frozen=True)
class Cancelled:
    error: str = "cancellation requested"
    detail: ClassVar[FailureDetail] = FailureDetail.CANCELLED
    status: ClassVar[OutcomeStatus] = OutcomeStatus.CANCELLED


Outcome = Succeeded | Failed | TimedOut | Crashed | Cancelled
