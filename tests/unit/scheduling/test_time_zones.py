"""Only IANA zone names are time zones; files of the host's zoneinfo directory are not."""

from __future__ import annotations

import zoneinfo

import pytest

from sundial.scheduling import errors, time_zones


@pytest.mark.parametrize(
    "name", ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/UTC", "Mars/Base"]
)
def test_names_that_are_not_iana_zones_are_refused_naming_the_field_and_the_fix(name: str) -> None:
    with pytest.raises(errors.UnknownTimeZoneError) as caught:
        time_zones.require_iana(name)
    message = str(caught.value)
    assert message.startswith(f"timeZone: {name!r} is not an IANA time zone name")
    assert "Europe/Paris" in message


def test_every_iana_name_is_accepted_and_loads() -> None:
    names = time_zones.iana_names()
    assert len(names) > 500 and {"UTC", "Europe/Paris", "US/Eastern", "Etc/GMT+5"} <= names
    for name in names:
        time_zones.require_iana(name)
        zoneinfo.ZoneInfo(name)


@pytest.mark.parametrize("name", [None, ""])
def test_absent_is_utc(name: str | None) -> None:
    time_zones.require_iana(name)


def test_the_host_database_is_not_the_reference() -> None:
    """Whatever the host's zoneinfo holds beyond the IANA names is refused."""
    extra = zoneinfo.available_timezones() - time_zones.iana_names()
    for name in extra:
        with pytest.raises(errors.UnknownTimeZoneError):
            time_zones.require_iana(name)
