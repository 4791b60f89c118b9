"""Every reason the scheduling layer reports becomes an Event: each is an ``EventReason``.

The scheduling layer is pure and does not import the API, so it names its reasons as plain
strings; the operator turns them into ``EventReason`` members when it records the Event. This
finds every reason constant of the scheduling layer and every ``SchedulingError``'s reason, so
a new one without its member fails here rather than in the trigger loop.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from sundial import scheduling
from sundial.api.conditions import EventReason
from sundial.scheduling import errors

_CAMEL = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+$|^[A-Z][a-z]+$")


def reason_constants() -> dict[str, str]:
    found = {}
    for info in pkgutil.iter_modules(scheduling.__path__, "sundial.scheduling."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and _CAMEL.match(value):
                found[f"{info.name}.{name}"] = value
    return found


def error_reasons() -> dict[str, str]:
    pending, found = [errors.SchedulingError], {}
    while pending:
        cls = pending.pop()
        found[cls.__name__] = cls.reason
        pending.extend(cls.__subclasses__())
    return found


def test_every_scheduling_reason_is_an_event_reason() -> None:
    reasons = {**reason_constants(), **error_reasons()}
    assert len(reasons) >= 12, reasons  # the finder found the known ones
    missing = {where: value for where, value in reasons.items() if value not in set(EventReason)}
    assert missing == {}, "add these to sundial.api.conditions.EventReason"
