"""A Warning Event the first time a run's status says no live runner can claim it."""

from __future__ import annotations

from typing import Any

from sundial.api import conditions
from sundial.operator import events


class Recorder:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str | None]] = []

    def record(
        self, involved: Any, event_type: str, reason: str, message: str, *, key: str | None = None
    ) -> None:
        self.recorded.append((event_type, reason, message, key))


UNCLAIMABLE = {"runId": "7", "reason": "Unclaimable", "lastError": "no live runner serves h"}


def test_the_first_unclaimable_status_records_one_warning() -> None:
    recorder = Recorder()
    events.record_unclaimable(recorder, {}, UNCLAIMABLE, {"phase": "Pending"})  # type: ignore[arg-type]
    assert recorder.recorded == [
        (
            events.WARNING,
            conditions.EventReason.UNCLAIMABLE,
            "run 7 is waiting: no live runner serves h",
            "unclaimable:7",
        )
    ]


def test_an_unchanged_or_other_reason_records_nothing() -> None:
    recorder = Recorder()
    events.record_unclaimable(recorder, {}, UNCLAIMABLE, UNCLAIMABLE)  # type: ignore[arg-type]
    events.record_unclaimable(recorder, {}, {"reason": "oom"}, {})  # type: ignore[arg-type]
    assert recorder.recorded == []
