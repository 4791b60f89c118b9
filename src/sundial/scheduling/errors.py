"""Errors raised for bad scheduling input.

Every error names the ScheduledJob field that was wrong, the value it held and the problem, so
the operator can copy the message into a ``Stalled`` condition or a Warning event unchanged and
the user knows what to fix. The trigger loop catches ``SchedulingError`` per schedule and moves
on; one bad schedule never stops the others.

    SchedulingError (SundialError, ValueError)
     ├── InvalidScheduleError      field ``schedule`` (or ``additionalSchedules[i]``,
     │                             ``exclusions[i]``)   reason ``InvalidSchedule``
     ├── UnknownTimeZoneError      field ``timeZone``   reason ``UnknownTimeZone``
     └── InvalidPolicyError        any policy field     reason ``InvalidPolicy``
"""

from __future__ import annotations

from sundial import errors as sundial_errors


class SchedulingError(sundial_errors.SundialError, ValueError):
    """A ScheduledJob field holds a value the scheduling layer cannot use.

    ``field`` is the spec field name as the user wrote it (``schedule``, ``timeZone``, ...),
    ``value`` the offending value and ``problem`` what is wrong with it. ``reason`` is the
    CamelCase word for condition reasons and event reasons.
    """

    reason = "InvalidSchedulingInput"

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{field}: {value!r} {problem}")


class InvalidScheduleError(SchedulingError):
    """The ``schedule`` is not a 5-field cron expression, a supported macro or ``@every``."""

    reason = "InvalidSchedule"

    def __init__(self, value: object, problem: str, *, field: str = "schedule") -> None:
        super().__init__(field, value, problem)


class UnknownTimeZoneError(SchedulingError):
    """The ``timeZone`` is not an IANA time zone name known to this machine's tz database."""

    reason = "UnknownTimeZone"

    def __init__(self, value: object, problem: str = "is not a known IANA time zone name") -> None:
        super().__init__("timeZone", value, problem)


class InvalidPolicyError(SchedulingError):
    """A policy field (``spreadSeconds``, ``maxBackfill``, ``quarantineAfter``, ...) is invalid."""

    reason = "InvalidPolicy"
