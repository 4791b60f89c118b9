"""``python -m sundial``: the same as the ``sundial`` command."""

from __future__ import annotations

from sundial import cli

cli.main()
