"""No tracked file keeps a merge's conflict markers: one was left in docs/failure-modes.md
once, where no test or build step reads the text and nothing else would have said so."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: The markers git writes: seven of a kind at the start of a line, the outer two followed by
#: a space and a name (a Markdown rule or a setext heading is "=======" alone, so that one
#: counts only between the other two).
OPENING = re.compile(r"^<{7} \S")
CLOSING = re.compile(r"^>{7} \S")


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    return [ROOT / name.decode() for name in listed if name]


def test_no_tracked_file_has_merge_conflict_markers() -> None:
    found = []
    for path in _tracked_text_files():
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(lines, start=1):
            if OPENING.match(line) or CLOSING.match(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line}")
    assert not found, "merge conflict markers left in:\n" + "\n".join(found)
