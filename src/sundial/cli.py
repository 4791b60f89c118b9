"""The ``sundial`` command: the one entry point for operators, runners and people."""

from __future__ import annotations

import click

import sundial


@click.group()
@click.version_option(sundial.__version__, prog_name="sundial")
def main() -> None:
    """Sundial: a Kubernetes-native job scheduler on PostgreSQL."""
