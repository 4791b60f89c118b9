"""Named SQL queries, one per ``queries/<name>.sql`` file, loaded with importlib.resources.

SQL stays SQL: it is reviewed, diffed and syntax-highlighted as SQL, and a query's name is
its file name, so ``grep`` finds every use. Queries use psycopg's ``%(name)s`` placeholders.
"""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["get", "names"]


@functools.cache
def get(name: str) -> str:
    """The text of ``queries/<name>.sql``; a ``FileNotFoundError`` names a missing query."""
    text = resources.files("sundial.store").joinpath("queries", f"{name}.sql").read_text("utf-8")
    return text


def names() -> list[str]:
    """Every query the package ships, for tests that check each one parses."""
    folder = resources.files("sundial.store").joinpath("queries")
    return sorted(p.name.removesuffix(".sql") for p in folder.iterdir() if p.name.endswith(".sql"))
