"""The ``[project]`` table of ``pyproject.toml``: the one place the release tools read the
project's name, version and dependencies from."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

__all__ = ["project"]


def project(root: Path) -> dict[str, Any]:
    """``root``'s ``pyproject.toml`` ``[project]`` table."""
    return dict(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"])
