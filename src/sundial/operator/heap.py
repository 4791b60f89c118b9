"""Hand the memory malloc holds free back to the operating system, after heavy work.

When Python frees an object that malloc gave it (anything over 512 bytes: the bodies of the
caches, the lists and dicts of a pass), glibc keeps the pages for later; they stay in the
process's resident set. At 10,000 ScheduledJobs idle, malloc's heaps were 74.8 MiB of which
27.3 MiB were in use (docs/adr/0038-operator-memory-at-rest.md). ``malloc_trim(0)`` gives the
free pages back.

Only glibc has ``malloc_trim`` (the operator image is Debian's); where it is missing (musl,
macOS) ``trim`` does nothing and says so by returning ``None``.

``HeapTrimmer`` decides when: the mirror tells it the work of each pass (objects stored,
written and listed); once the work since the last trim reaches ``threshold``, it trims on the
first pass that does no work (the operator went idle) or, while the work goes on, at most
every ``interval``. An operator at rest does no work, so it never trims: its cost at steady
state is nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["HeapTrimmer", "Trim", "trim"]

log = logging.getLogger("sundial.operator.heap")


def _find_malloc_trim() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    trimming: Callable[[int], int] = function
    return trimming


_MALLOC_TRIM = _find_malloc_trim()


def _resident_bytes() -> int | None:
    """This process's resident set (Linux; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Trim:
    #: How much the resident set shrank (``None`` where it cannot be read).
    released_bytes: int | None
    #: CPU time of the call itself (it runs in the calling thread).
    cpu_seconds: float


def trim() -> Trim | None:
    """``malloc_trim(0)``: the free pages of every malloc arena back to the OS; ``None``
    where the C library has no ``malloc_trim``."""
    if _MALLOC_TRIM is None:
        return None
    before = _resident_bytes()
    cpu_started = time.thread_time()
    _MALLOC_TRIM(0)
    cpu = time.thread_time() - cpu_started
    after = _resident_bytes()
    released = None if before is None or after is None else before - after
    return Trim(released_bytes=released, cpu_seconds=cpu)


class HeapTrimmer:
    """When to ``trim``: after ``threshold`` objects of work, once idle or every ``interval``."""

    def __init__(
        self,
        *,
        threshold: int = 256,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        trimming: Callable[[], Trim | None] = trim,
    ) -> None:
        self.threshold = threshold
        self.interval = interval
        self._clock = clock
        self._trim = trimming
        self._pending = 0
        self._last = clock()
        #: Trims done, and their CPU time in total.
        self.trims = 0
        self.cpu_seconds = 0.0

    def after_pass(self, work: int) -> Trim | None:
        """A pass did ``work`` (objects stored, written, listed): trim now if due."""
        self._pending += work
        if self._pending < self.threshold:
            return None
        now = self._clock()
        if work and now - self._last < self.interval:
            return None  # still busy: trimmed once it goes idle, or an interval on
        done = self._trim()
        self._pending = 0
        self._last = now
        if done is None:
            return None
        self.trims += 1
        self.cpu_seconds += done.cpu_seconds
        log.info(
            "returned free heap to the OS",
            extra={
                "released_mib": None
                if done.released_bytes is None
                else round(done.released_bytes / 2**20, 1),
                "cpu_ms": round(done.cpu_seconds * 1000, 2),
                "trims": self.trims,
                "trims_cpu_ms": round(self.cpu_seconds * 1000, 2),
            },
        )
        return done
