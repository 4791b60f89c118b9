"""The e2e tier's one poll loop: wait for something the cluster brings about.

The e2e tier runs outside the test tree's ``support`` package (it can run against a cluster of
your own), so it keeps its own small loop, with the same shape: a deadline, and a failure that
names what did not happen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def until(check: Callable[[], Any], *, within: float, what: str, every: float = 1.0) -> Any:
    """Call ``check`` until it returns something truthy, and return that; fail after
    ``within`` seconds, saying ``what`` did not happen."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} within {within:.0f} s"
        time.sleep(every)
