"""The chart README's table of every value, written from ``values.yaml`` and its comments.

A ``# --`` comment right above a key documents it (the convention of helm-docs, which Helm
charts commonly follow; its further ``#`` lines continue it): the key's row takes that text,
and the key's whole value as its default, so a documented map (a security context, resources)
is one row, unless keys inside it are documented too: then its row says "(below)" and each key
inside has a row of its own. An undocumented key with a map in it is walked into; any other
undocumented key is a row of its own, with no text. The table sits in
``charts/sundial/README.md`` between two markers; the rest of the README is written by hand.

    make chart-readme                                          # rewrite the table
    .venv/bin/python -m sundial.localdev.chart_readme          # the same
    .venv/bin/python -m sundial.localdev.chart_readme --check  # exit 1 if it is stale

A unit test writes the table afresh and compares, so a value added without its row fails the
suite, saying what to run.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

__all__ = ["BEGIN", "END", "documented_keys", "rewritten", "table"]

BEGIN = "<!-- Every value: written by `python -m sundial.localdev.chart_readme`; do not edit. -->"
END = "<!-- End of every value. -->"

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):(?:\s|$)")
_DOC = re.compile(r"^ *# -- ?(?P<text>.*)$")
_MORE = re.compile(r"^ *# ?(?P<text>.*)$")


def documented_keys(text: str) -> dict[tuple[str, ...], str]:
    """Each key path with a ``# --`` comment right above it, and that comment's text."""
    found: dict[tuple[str, ...], str] = {}
    path: list[tuple[int, str]] = []
    pending: list[str] | None = None
    for line in text.splitlines():
        if doc := _DOC.match(line):
            pending = [doc["text"].strip()]
            continue
        if pending is not None and (more := _MORE.match(line)):
            pending.append(more["text"].strip())
            continue
        key = _KEY.match(line)
        if key is None:
            if not line.strip() or line.lstrip().startswith("#"):
                pending = None  # a blank line or another comment parts a comment from keys
            continue
        indent = len(key["indent"])
        while path and path[-1][0] >= indent:
            path.pop()
        path.append((indent, key["key"]))
        if pending is not None:
            found[tuple(name for _, name in path)] = " ".join(pending)
            pending = None
    return found


def _default(value: Any) -> str:
    return f"`{json.dumps(value, separators=(', ', ': '))}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(values_text: str) -> str:
    """The Markdown table of every value of ``values_text`` (a values.yaml)."""
    documented = documented_keys(values_text)
    rows = ["| Key | Default | What |", "|---|---|---|"]

    def walk(node: dict[str, Any], prefix: tuple[str, ...]) -> None:
        for name, value in node.items():
            path = (*prefix, str(name))
            text = documented.get(path)
            key = ".".join(path)
            within = (
                isinstance(value, dict)
                and value
                and any(
                    other[: len(path)] == path for other in documented if len(other) > len(path)
                )
            )
            if within or (text is None and isinstance(value, dict) and value):
                if text is not None:  # its keys below carry their own text and defaults
                    rows.append(f"| `{key}` | (below) | {_cell(text)} |")
                walk(value, path)
                continue
            rows.append(f"| `{key}` | {_cell(_default(value))} | {_cell(text or '')} |")

    walk(yaml.safe_load(values_text) or {}, ())
    return "\n".join(rows)


def rewritten(readme: str, values_text: str) -> str:
    """``readme`` with the table between its markers written anew."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the chart README lacks the markers {BEGIN!r} ... {END!r}")
    return readme[: start + len(BEGIN)] + "\n\n" + table(values_text) + "\n\n" + readme[end:]


def main(argv: list[str]) -> int:
    chart = Path(__file__).resolve().parents[3] / "charts" / "sundial"
    readme_path = chart / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    fresh = rewritten(readme, (chart / "values.yaml").read_text(encoding="utf-8"))
    if "--check" in argv:
        if fresh != readme:
            print(
                "charts/sundial/README.md's table of values is stale: run `make chart-readme`",
                file=sys.stderr,
            )
            return 1
        return 0
    readme_path.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
