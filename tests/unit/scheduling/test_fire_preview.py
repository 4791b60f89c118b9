"""``fire_preview``: the next fires, and what DST did to each, against the brute-force daemon.

The oracle (tests/support/cron_oracle.py) steps minute by minute through every offset change
of 2025-2028 in zones with 30-, 60- and 120-minute shifts, negative DST and four changes a
year. For each fire it knows which wall minutes it was the first to show: the matching ones
other than the fire's own reading were skipped by spring-forward and fire there, together.
A fire whose wall minute the clock shows again later was repeated by fall-back. The preview
must list the same fires and say exactly that, no more and no less.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sundial.scheduling import cron, fire_preview, spread
from support import cron_oracle

ZONES = [
    "Australia/Lord_Howe",  # a 30-minute shift
    "Pacific/Chatham",  # +12:45 / +13:45
    "Europe/Dublin",  # negative DST
    "Africa/Casablanca",  # four changes a year
    "Europe/Berlin",
    "America/Santiago",  # transitions at local midnight
    "Antarctica/Troll",  # a two-hour shift
]
EXPRESSIONS = ["*/30 * * * *", "15 2 * * *", "45 1 * * *", "0 * * * *", "*/20 0-3 * * *"]
WINDOW = timedelta(hours=5)
MINUTE = timedelta(minutes=1)


Fire = tuple[datetime, str | None]


def _oracle(text: str, zone_name: str, start: datetime, end: datetime) -> list[Fire]:
    """Each fire in (start, end] with the note the rules call for."""
    expression = cron_oracle.parse(text)
    zone = ZoneInfo(zone_name)
    seen = cron_oracle.latest_wall_seen(zone, start)
    fires: list[Fire] = []
    instant = start.replace(second=0, microsecond=0) + MINUTE
    while instant <= end:
        now = cron_oracle.wall(instant, zone)
        if now > seen:
            first_seen = [seen + MINUTE * k for k in range(1, (now - seen) // MINUTE + 1)]
            matched = [minute for minute in first_seen if expression.matches(minute)]
            if matched:
                skipped = [minute for minute in matched if minute != now]
                shown_again = any(
                    cron_oracle.wall(instant + MINUTE * k, zone) == now for k in range(1, 240)
                )
                note = None
                if skipped:
                    note = "spring " + ",".join(f"{m:%H:%M}" for m in skipped)
                elif shown_again:
                    note = f"twice {now:%H:%M}"
                fires.append((instant, note))
            seen = now
        instant += MINUTE
    return fires


def _kind(note: str | None) -> str | None:
    """The preview's note, reduced to the oracle's words."""
    if note is None:
        return None
    if "spring forward" in note:
        return "spring " + note.split(" do")[0].replace(", ", ",")
    assert "fall back" in note and "the second does not fire" in note, note
    return f"twice {note.split(' ')[0]}"


@pytest.mark.parametrize("zone_name", ZONES)
def test_every_transition_of_four_years_is_previewed_as_the_daemon_fires_it(
    zone_name: str,
) -> None:
    checked = 0
    for transition in cron_oracle.transitions(zone_name, 2025, 2028):
        start, end = transition - WINDOW, transition + WINDOW
        for text in EXPRESSIONS:
            expected = _oracle(text, zone_name, start, end)
            if not expected:
                continue
            schedule = cron.parse_schedule(text, zone_name)
            previewed = fire_preview.preview(schedule, start, len(expected))
            got = [(fire.fire_time, _kind(fire.note)) for fire in previewed]
            assert got == expected, (zone_name, text, transition)
            checked += 1
    assert checked >= 20, checked


def test_the_spread_offset_is_the_jobs_own_and_unknown_without_its_uid() -> None:
    schedule = cron.parse_schedule("0 3 * * *", "UTC")
    after = datetime(2026, 1, 1, tzinfo=UTC)
    uid = "5f0c6a52-8d0e-4c4e-9e61-1f2a4b1b9b77"
    fires = fire_preview.preview(schedule, after, 3, spread_seconds=600, identity=uid)
    offset = spread.offset_for(uid, 600)
    assert [f.run_at for f in fires] == [f.fire_time + offset for f in fires]
    assert timedelta(0) <= offset < timedelta(seconds=600)
    unknown = fire_preview.preview(schedule, after, 3, spread_seconds=600)
    assert [f.run_at for f in unknown] == [None, None, None]
    plain = fire_preview.preview(schedule, after, 3)
    assert [f.run_at for f in plain] == [f.fire_time for f in plain]


def test_intervals_have_no_notes_and_the_count_is_bounded() -> None:
    every = cron.parse_schedule("@every 90m", "Europe/Berlin")
    fires = fire_preview.preview(every, datetime(2026, 3, 29, tzinfo=UTC), 4)
    assert [f.note for f in fires] == [None] * 4
    assert fires[1].fire_time - fires[0].fire_time == timedelta(minutes=90)
    with pytest.raises(ValueError, match="count"):
        fire_preview.preview(every, datetime(2026, 1, 1, tzinfo=UTC), 0)
