"""Condition types, reasons and Event reasons are the words the design promises."""

from __future__ import annotations

import datetime
import re

import pytest

from sundial.api import conditions

METAV1_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def test_condition_types_are_those_of_the_design() -> None:
    assert {str(t) for t in conditions.ConditionType} == {
        "Ready", "Reconciling", "Stalled", "Suspended", "Quarantined", "ScheduleMissed", "Degraded",
        "Complete", "Failed",
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


NOON = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
LATER = NOON + datetime.timedelta(minutes=5)


def test_setting_a_new_condition_appends_it_with_the_given_time() -> None:
    [ready] = conditions.set_condition(
        None, conditions.ConditionType.READY, "True", conditions.ConditionReason.RECONCILED, "",
        now=NOON, observed_generation=3,
    )  # fmt: skip
    assert (ready.type, ready.status, ready.last_transition_time) == ("Ready", "True", NOON)
    assert ready.to_manifest()["observedGeneration"] == 3


def test_transition_time_moves_only_when_the_status_changes() -> None:
    first = conditions.set_condition(None, "Stalled", "True", "InvalidSchedule", "bad", now=NOON)
    reworded = conditions.set_condition(
        first, "Stalled", "True", "UnknownTimeZone", "zone", now=LATER
    )
    [stalled] = reworded
    assert (stalled.reason, stalled.last_transition_time) == ("UnknownTimeZone", NOON)
    [cleared] = conditions.set_condition(reworded, "Stalled", "False", "Reconciled", "", now=LATER)
    assert cleared.last_transition_time == LATER


def test_other_conditions_keep_their_place() -> None:
    both = conditions.set_condition(None, "Ready", "True", "Reconciled", "", now=NOON)
    both = conditions.set_condition(both, "Suspended", "True", "SuspendedBySpec", "", now=NOON)
    both = conditions.set_condition(both, "Ready", "False", "SuspendedBySpec", "", now=LATER)
    assert [c.type for c in both] == ["Ready", "Suspended"]
    assert conditions.find_condition(both, "Suspended") is both[1]
    assert conditions.find_condition(both, "Degraded") is None


def test_long_messages_are_cut_to_the_schema_bound() -> None:
    [long] = conditions.set_condition(
        None, "Stalled", "True", "InvalidSpec", "x" * 40_000, now=NOON
    )
    assert len(long.message) == conditions.MAX_MESSAGE_LENGTH
