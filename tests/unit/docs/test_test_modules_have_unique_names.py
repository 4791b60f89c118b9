"""Every test module's file name is unique across tests/ and e2e/: the test folders are not
packages, so pytest imports each module under its bare name, and a second module of the same
name stops the whole run at collection ("import file mismatch"). It did once, in CI, when a
new test_heartbeats.py appeared beside the runner's."""

from __future__ import annotations

import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_no_two_test_modules_share_a_file_name() -> None:
    seen: dict[str, list[str]] = collections.defaultdict(list)
    for folder in ("tests", "e2e"):
        for path in (ROOT / folder).rglob("test_*.py"):
            seen[path.name].append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert shared == {}, f"rename one of each: {shared}"
