"""One attempt of one run, as the claim loop hands it to an executor.

The invocation carries everything the handler may see (through its ``JobContext``) plus the
two ways an attempt is stopped early: its timeout and its cancellation event. Setting
``cancel`` (for example when a heartbeat sees ``cancel_requested``) stops the attempt with a
``Cancelled`` outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Invocation:
    handler: str
    """A registered handler name; never an import path."""
    run_id: str
    attempt: int
    """The fencing token: grows with every claim of the run."""
    idempotency_key: str
    """Per run, not per attempt: the same on every retry."""
    args: Mapping[str, Any] = field(default_factory=dict)
    fire_time: datetime | None = None
    timeout_seconds: float | None = None
    """Overrides the handler's registered timeout when set."""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
