"""Wherever the README or a message tells a user to install Sundial with pip, it names the
distribution pyproject.toml builds. The import package is ``sundial``, but the name ``sundial``
on the package index belongs to an unrelated project: ``pip install sundial`` would install
someone else's code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
NAME = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
#: ``pip install 'NAME[extra]'`` or ``pip install NAME``, across a line break too.
_INSTALL = re.compile(r"pip\s+install\s+'?(?!-)([A-Za-z0-9_.-]+)(?:\[|'|\s|$)")


def test_the_distribution_is_not_the_index_s_other_sundial() -> None:
    assert NAME != "sundial"


def test_every_pip_install_of_sundial_names_the_distribution() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "src" / "sundial").rglob("*.py"))
    wrong = []
    for path in texts:
        for match in _INSTALL.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1)
            if name.startswith("sundial") and name != NAME:
                wrong.append(f"{path.relative_to(ROOT)}: pip install {name}")
    assert wrong == []
