"""Condition types, reasons and Event reasons are the words the design promises."""

from __future__ import annotations

import re

import pytest

from sundial.api import conditions

METAV1_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def test_condition_types_are_those_of_the_design() -> None:
    assert {str(t) for t in conditions.ConditionType} == {
        "Ready", "Reconciling", "Stalled", "Suspended", "Quarantined", "ScheduleMissed", "Degraded",
    }  # fmt: skip


def test_event_reasons_cover_design_section_8() -> None:
    promised = {
        "MissSchedule", "TooManyMissedTimes", "JobAlreadyActive", "UnknownTimeZone",
        "SuccessfulCreate", "Coalesced", "Backfilled", "Quarantined", "CircuitOpen",
        "DeadLettered", "OOMKilled",
    }  # fmt: skip
    assert promised <= {str(reason) for reason in conditions.EventReason}


@pytest.mark.parametrize(
    "reason", [*conditions.ConditionReason, *conditions.EventReason], ids=lambda r: str(r)
)
def test_every_reason_fits_the_metav1_reason_pattern(reason: str) -> None:
    assert METAV1_REASON.match(reason)


def test_constants_are_plain_strings_on_the_wire() -> None:
    assert conditions.ConditionType.READY == "Ready"
    assert f"{conditions.EventReason.MISS_SCHEDULE}" == "MissSchedule"
