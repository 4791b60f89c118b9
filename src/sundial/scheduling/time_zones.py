"""Which ``timeZone`` values are IANA time zones: the names of the ``tzdata`` package.

``zoneinfo.ZoneInfo`` opens any file under the host's zoneinfo directory, so ``localtime`` (a
link to the host's own zone), ``posixrules`` (a POSIX default) and ``Factory`` (a placeholder
with the abbreviation ``-00``) load as well as ``Europe/Paris`` does - and fire times would
then follow whatever the operator image was built with. A zone is accepted only if the IANA
database names it, as the ``tzdata`` package (a pinned dependency, the same on every machine)
lists it, ``Factory`` excepted; backward-compatible links such as ``US/Eastern`` are IANA names
and stay accepted. The operator image sets ``PYTHONTZPATH`` empty so that the rules themselves
come from that package too, not from the base image.
"""

from __future__ import annotations

import functools
import importlib.resources

from sundial.scheduling import errors

__all__ = ["NOT_ZONES", "iana_names", "require_iana"]

NOT_ZONES = frozenset({"Factory", "localtime", "posixrules", "posix", "right"})
"""Names a zoneinfo directory holds that are not time zones."""


@functools.cache
def iana_names() -> frozenset[str]:
    """Every zone and link name of the IANA database, from the ``tzdata`` package."""
    listing = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(listing.split()) - NOT_ZONES


def require_iana(time_zone: str | None) -> None:
    """Return if ``time_zone`` is absent (UTC) or an IANA zone; else ``UnknownTimeZoneError``
    naming the field and the fix."""
    if time_zone is None or time_zone == "":
        return
    if not isinstance(time_zone, str) or time_zone not in iana_names():
        raise errors.UnknownTimeZoneError(
            str(time_zone)[:64],
            "is not an IANA time zone name: use one such as Europe/Paris, America/New_York or"
            " UTC (names of host files like localtime or posixrules are not zones)",
        )
