"""Every path the README's layout table names exists, and so does every docs/ page it links."""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
README = (REPOSITORY / "README.md").read_text(encoding="utf-8")


def test_every_path_in_the_layout_table_exists() -> None:
    table = README.split("## Layout", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) > 5
    missing = []
    for row in rows:
        first_cell = row.split("|")[1]
        for path in re.findall(r"`([^`]+)`", first_cell):
            if not (REPOSITORY / path).exists():
                missing.append(path)
    assert not missing, f"the README's layout table names paths that do not exist: {missing}"


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        # Not in fenced blocks (a benchmark's output can hold "f[x](y)") nor in code spans.
        prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        prose = re.sub(r"`[^`\n]*`", "", prose)
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPOSITORY)} -> {target}")
    assert not broken, broken
