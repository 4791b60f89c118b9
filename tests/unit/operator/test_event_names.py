"""Keyed Events have deterministic, valid names, so a repeated report is one Event."""

from __future__ import annotations

import re

from sundial.api.conditions import EventReason
from sundial.operator import events

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def test_the_same_key_gives_the_same_name_and_another_key_another():
    first = events.event_name("nightly", EventReason.OOM_KILLED, "run-12-3")
    assert first == events.event_name("nightly", EventReason.OOM_KILLED, "run-12-3")
    assert first == "nightly.oomkilled.run-12-3"
    assert first != events.event_name("nightly", EventReason.OOM_KILLED, "run-12-4")
    assert first != events.event_name("nightly", EventReason.EVICTED, "run-12-3")


def test_the_mirror_and_the_launcher_share_one_dead_lettered_name():
    key = events.dead_lettered_key(7, 4)
    assert events.event_name("job", EventReason.DEAD_LETTERED, key) == "job.deadlettered.run-7-4"


def test_names_stay_valid_subdomains_for_long_objects_and_odd_keys():
    name = events.event_name("a" * 253, EventReason.FAILED_START, "Run 9/Attempt_2")
    assert len(name) <= 253
    assert DNS_SUBDOMAIN.match(name), name


def test_runs_that_used_up_their_retries_warn_by_how_they_ended() -> None:
    # A run whose retries were spent by timeouts ends TimedOut, not DeadLettered (ADR 0001):
    # it must still leave a Warning, under its own reason.
    assert events.ENDED_WARNINGS["DeadLettered"] == EventReason.DEAD_LETTERED
    assert events.ENDED_WARNINGS["TimedOut"] == EventReason.TIMED_OUT
    assert "Succeeded" not in events.ENDED_WARNINGS
    assert "Cancelled" not in events.ENDED_WARNINGS
