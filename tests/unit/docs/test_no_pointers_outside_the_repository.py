"""The repository speaks for itself: nothing in it points a reader at documents a user does not
have (the design notes it was built from, an issue tracker). Point at docs/ or an ADR, or say
the thing in place."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
#: What a user cannot open: the internal design document (upper case; docs/design.md is the
#: user's), the system design it grew from, and issue numbers.
POINTERS = re.compile(
    r"(?-i:\bDESIGN\b)|\bseed[- ]design\b|\bthe seed\b|\bseed's\b|\bissue #?\d+\b",
    re.IGNORECASE,
)
#: This file names the patterns it forbids.
EXEMPT = {"tests/unit/docs/test_no_pointers_outside_the_repository.py"}


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPOSITORY, capture_output=True, check=True
    ).stdout.split(b"\0")
    files = []
    for name in listed:
        path = REPOSITORY / name.decode()
        if (
            name
            and path.is_file()
            and path.suffix
            in {
                ".py",
                ".md",
                ".yaml",
                ".yml",
                ".tpl",
                ".sql",
                ".txt",
                ".json",
                ".sh",
                ".lua",
                ".toml",
            }
        ):
            files.append(path)
    return files


def test_nothing_points_at_documents_a_user_does_not_have() -> None:
    found = []
    for path in tracked_text_files():
        relative = str(path.relative_to(REPOSITORY))
        if relative in EXEMPT:
            continue
        for number, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
        ):
            if POINTERS.search(line):
                found.append(f"{relative}:{number}: {line.strip()[:120]}")
    assert not found, "point at docs/ or an ADR instead:\n" + "\n".join(found)
