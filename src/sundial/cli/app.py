"""The ``sundial`` group every command hangs off."""

from __future__ import annotations

import click

import sundial

__all__ = ["main"]


@click.group()
@click.version_option(sundial.__version__, prog_name="sundial")
def main() -> None:
    """Sundial: a Kubernetes-native job scheduler on PostgreSQL."""
