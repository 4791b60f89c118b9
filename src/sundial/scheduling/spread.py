"""Deterministic per-job spread, so thousands of ``0 * * * *`` jobs do not all start at :00.

A job's offset is a pure function of its identity (the ScheduledJob's uid) and
``spreadSeconds``: blake2b of the identity, reduced to a millisecond in ``[0, spreadSeconds)``.
Every leader, every restart and every Python process computes the same offset (Python's
``hash()`` is salted per process, so it is never used). ``spreadSeconds: 0`` means the exact
fire time.

The fire time stays the logical time handed to the job; only the run's ``run_at`` moves:
``run_at = fire_time + offset``. Offsets are independent per job, so the load is spread like a
uniform random sample: with 10,000 jobs over 60 s each second holds about 1.7 % of them, and
the fire-rate budget (``fire_budget``) flattens what a hash cannot.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta

from sundial.scheduling import errors
from sundial.scheduling.clock import require_aware

MAX_SPREAD_SECONDS = 3600

_PERSONALISATION = b"sundial.spread"


def offset_for(identity: str | uuid.UUID | bytes, spread_seconds: int) -> timedelta:
    """The job's offset in ``[0, spread_seconds)``, at millisecond resolution."""
    validate_spread_seconds(spread_seconds)
    if spread_seconds == 0:
        return timedelta(0)
    digest = hashlib.blake2b(_identity_bytes(identity), digest_size=8, person=_PERSONALISATION)
    milliseconds = int.from_bytes(digest.digest(), "big") % (spread_seconds * 1000)
    return timedelta(milliseconds=milliseconds)


def run_at(fire_time: datetime, identity: str | uuid.UUID | bytes, spread_seconds: int) -> datetime:
    """When the run of ``fire_time`` becomes due: the fire time plus the job's offset."""
    return require_aware(fire_time, "fire_time") + offset_for(identity, spread_seconds)


def validate_spread_seconds(spread_seconds: int) -> int:
    """Return ``spread_seconds`` or raise ``InvalidPolicyError`` naming ``spreadSeconds``."""
    if (
        isinstance(spread_seconds, bool)
        or not isinstance(spread_seconds, int)
        or not 0 <= spread_seconds <= MAX_SPREAD_SECONDS
    ):
        raise errors.InvalidPolicyError(
            "spreadSeconds", spread_seconds, f"must be an integer from 0 to {MAX_SPREAD_SECONDS}"
        )
    return spread_seconds


def _identity_bytes(identity: str | uuid.UUID | bytes) -> bytes:
    if isinstance(identity, uuid.UUID):
        # The canonical text form, so a uid given as a string or a UUID lands on the same offset.
        return str(identity).encode()
    if isinstance(identity, str):
        if not identity:
            raise ValueError("a job identity for spread must not be empty")
        return identity.encode()
    return bytes(identity)
