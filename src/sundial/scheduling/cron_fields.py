"""The five fields of a cron expression: what each matches, and what is wrong with a bad one.

``expand`` checks a 5-field expression field by field, with errors that name the field and say
what to write instead, and expands every field to the explicit set of values it matches:

- ``N-N`` is the single value N; ``N/S`` is N to the end of the field, stepping S (robfig/cron's
  reading); ``*`` and ``N/S`` in day-of-week stop at 6, and 7 is Sunday (folded into 0);
- month and weekday names in any case, in values, ranges and lists;
- a day field is *restricted* unless its text starts with ``*`` or is ``?`` (Vixie cron's rule),
  and day-of-month and day-of-week are OR'ed only when both are restricted.

``Fields.for_croniter`` writes the sets back as ``*`` or explicit lists plus croniter's
``day_or`` flag, so croniter only walks the calendar and none of its own readings apply.
``require_a_fire`` refuses an expression that no date can ever match. docs/adr/0002 says why.
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass

from sundial.scheduling import errors

_MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
        start=1,
    )
}
_WEEKDAY_NAMES = {
    name: number for number, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])
}


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]
    allows_question_mark: bool
    #: Where ``*`` and ``N/S`` stop: day-of-week accepts 7 for Sunday but ``*`` means 0-6.
    step_high: int


_FIELDS = (
    _Field("minute", 0, 59, {}, False, 59),
    _Field("hour", 0, 23, {}, False, 23),
    _Field("day-of-month", 1, 31, {}, True, 31),
    _Field("month", 1, 12, _MONTH_NAMES, False, 12),
    _Field("day-of-week", 0, 7, _WEEKDAY_NAMES, True, 6),
)
_FULL = {
    "minute": frozenset(range(60)),
    "hour": frozenset(range(24)),
    "day-of-month": frozenset(range(1, 32)),
    "month": frozenset(range(1, 13)),
    "day-of-week": frozenset(range(7)),
}
#: The most days each month can have (February in a leap year).
_LONGEST_MONTH = {month: calendar.monthrange(2000, month)[1] for month in range(1, 13)}

_ITEM = re.compile(r"^(?P<range>\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:/(?P<step>[0-9]+))?$")
#: croniter's and Quartz's extensions (last day, nearest weekday, nth weekday, hashed).
_EXTENSION = re.compile(r"#|^H$|^H\(|^L$|^LW$|^[0-9]+[LW]$", re.IGNORECASE)
#: What a cron field can look like at all; anything else after five fields is a command.
_CRON_TOKEN = re.compile(r"^[0-9*?,/#()LWH-]+$", re.IGNORECASE)
_NAME = re.compile("|".join([*_MONTH_NAMES, *_WEEKDAY_NAMES]), re.IGNORECASE)


@dataclass(frozen=True)
class Fields:
    """What each field of a 5-field expression matches, expanded to explicit values."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    #: 0-6, Sunday is 0 (7 is folded into 0).
    days_of_week: frozenset[int]
    day_of_month_restricted: bool
    day_of_week_restricted: bool

    @property
    def days_ored(self) -> bool:
        """A day matches either day field only when both are restricted (Vixie cron's rule)."""
        return self.day_of_month_restricted and self.day_of_week_restricted

    def matches(self, wall_time: datetime.datetime) -> bool:
        """Whether the wall time (its minute) is one the expression names."""
        if (
            wall_time.minute not in self.minutes
            or wall_time.hour not in self.hours
            or wall_time.month not in self.months
        ):
            return False
        day_of_month = wall_time.day in self.days_of_month
        day_of_week = wall_time.isoweekday() % 7 in self.days_of_week
        if self.days_ored:
            return day_of_month or day_of_week
        return day_of_month and day_of_week

    def for_croniter(self) -> tuple[str, bool]:
        """The expression and ``day_or`` flag that make croniter match exactly these values.

        Every field is written as ``*`` or an explicit list, so croniter's own readings of
        ranges (``N-N`` as the whole cycle), steps and names never apply, and ``day_or`` is
        decided here rather than by croniter looking for a literal ``*``.
        """
        days_of_month, days_of_week = self.days_of_month, self.days_of_week
        if self.days_ored and (
            days_of_month == _FULL["day-of-month"] or days_of_week == _FULL["day-of-week"]
        ):
            # One day field matches every day, so the OR does too.
            days_of_month, days_of_week = _FULL["day-of-month"], _FULL["day-of-week"]
        fields = [
            _croniter_field(self.minutes, "minute"),
            _croniter_field(self.hours, "hour"),
            _croniter_field(days_of_month, "day-of-month"),
            _croniter_field(self.months, "month"),
            _croniter_field(days_of_week, "day-of-week"),
        ]
        return " ".join(fields), self.days_ored


def _croniter_field(values: frozenset[int], name: str) -> str:
    if values == _FULL[name]:
        return "*"
    return ",".join(str(value) for value in sorted(values))


def expand(text: str) -> Fields:
    """Check a 5-field expression field by field and expand it to the values it matches."""
    parts = text.split()
    if len(parts) != 5:
        raise errors.InvalidScheduleError(
            text,
            f"is not a valid cron expression: it has {len(parts)} fields, expected 5"
            f"{_field_count_hint(parts)}",
        )
    expanded = [
        _validate_field(text, spec, part) for spec, part in zip(_FIELDS, parts, strict=True)
    ]
    return Fields(
        minutes=expanded[0],
        hours=expanded[1],
        days_of_month=expanded[2],
        months=expanded[3],
        days_of_week=frozenset(day % 7 for day in expanded[4]),
        # Vixie cron's rule, also robfig/cron's for `*` and `*/1`: a day field whose text
        # starts with `*` (or is `?`) does not restrict, whatever step follows.
        day_of_month_restricted=not parts[2].startswith(("*", "?")),
        day_of_week_restricted=not parts[4].startswith(("*", "?")),
    )


def _field_count_hint(parts: list[str]) -> str:
    if len(parts) > 5 and not all(
        _CRON_TOKEN.match(_NAME.sub("", part) or "0") for part in parts[5:]
    ):
        return (
            " (the schedule holds only the time fields: a crontab line's command goes in the "
            "job's handler or template, not here)"
        )
    if len(parts) in (6, 7):
        return " (seconds and years fields are not supported)"
    return " (minute hour day-of-month month day-of-week)"


def _validate_field(text: str, spec: _Field, part: str) -> frozenset[int]:
    def fail(problem: str) -> errors.InvalidScheduleError:
        return errors.InvalidScheduleError(text, f"is not a valid cron expression: {problem}")

    if part == "?":
        if not spec.allows_question_mark:
            raise fail(f"{spec.name} does not accept '?'")
        return frozenset(range(spec.low, spec.step_high + 1))
    values: set[int] = set()
    for item in part.split(","):
        match = _ITEM.match(item)
        if match is None and _EXTENSION.search(item):
            raise fail(_extension_problem(spec, item))
        if match is None:
            raise fail(f"{spec.name} item {item!r} is not a number, name, range or step")
        step_text = match.group("step")
        step = 1 if step_text is None else int(step_text)
        if not 1 <= step <= spec.high:
            raise fail(f"{spec.name} step {step_text} out of range 1-{spec.high}")
        span = match.group("range")
        if span == "*":
            first, last = spec.low, spec.step_high
        else:
            bounds = [_field_value(fail, spec, bound) for bound in span.split("-")]
            first = bounds[0]
            if len(bounds) == 2:
                last = bounds[1]
            elif step_text is not None:
                # `N/S` means `N-max/S`, as in robfig/cron and croniter (`7/S` is Sunday).
                last = max(first, spec.step_high)
            else:
                last = first
            if first > last:
                raise fail(
                    f"{spec.name} range {span} runs backwards; {_wrap_hint(spec, first, last)}"
                )
        # An explicit expansion: `N-N` is the single value N, never croniter's whole cycle.
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _extension_problem(spec: _Field, token: str) -> str:
    return (
        f"{spec.name} value {token!r} uses L, W, # or H, which Sundial does not support "
        "(neither do Vixie cron and Kubernetes CronJob); list the values instead"
    )


def _wrap_hint(spec: _Field, first: int, last: int) -> str:
    if spec.name == "day-of-week" and last == 0:
        return f"Sunday is also 7, so write {first}-7"
    return f"a range cannot wrap around, so write {first}-{spec.high},{spec.low}-{last}"


def _field_value(
    fail: Callable[[str], errors.InvalidScheduleError], spec: _Field, token: str
) -> int:
    if token.isdigit():
        value = int(token)
    elif token.upper() in spec.names:
        value = spec.names[token.upper()]
    elif _EXTENSION.search(token):
        raise fail(_extension_problem(spec, token))
    else:
        raise fail(f"{spec.name} value {token!r} is not a number or a known name")
    if not spec.low <= value <= spec.high:
        raise fail(f"{spec.name} {value} out of range {spec.low}-{spec.high}")
    return value


def require_a_fire(text: str, fields: Fields) -> None:
    """Refuse an expression no calendar date matches, saying which field to change.

    Every month has every weekday, and every valid date falls on every weekday within 28 years
    (February 29 within 40), so only a day-of-month that no selected month has can make an
    expression never fire, and only when the day-of-month is not OR'ed with a restricted
    day-of-week.
    """
    if fields.days_ored:
        return
    if any(day <= _LONGEST_MONTH[month] for month in fields.months for day in fields.days_of_month):
        return
    month_names = [calendar.month_name[month] for month in sorted(fields.months)]
    days = [str(day) for day in sorted(fields.days_of_month)]
    have = "has" if len(month_names) == 1 else "have"
    raise errors.InvalidScheduleError(
        text,
        f"never fires: {_join(month_names, 'and')} {have} no day {_join(days, 'or')}; "
        "change the day-of-month or the month field",
    )


def _join(words: list[str], conjunction: str) -> str:
    if len(words) <= 2:
        return f" {conjunction} ".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"
