"""The ``sundial`` command: the one entry point for operators, runners and people."""

from __future__ import annotations

import click

import sundial


@click.group()
@click.version_option(sundial.__version__, prog_name="sundial")
def main() -> None:
    """Sundial: a Kubernetes-native job scheduler on PostgreSQL."""


@main.command()
@click.option(
    "--dsn",
    envvar="SUNDIAL_DSN",
    required=True,
    help="libpq URL of the PostgreSQL database (or SUNDIAL_DSN).",
)
@click.option("--target", type=int, default=None, help="Stop after this migration version.")
def migrate(dsn: str, target: int | None) -> None:
    """Apply the database migrations that are not applied yet (safe to run concurrently)."""
    from sundial.store import migrate as store_migrate

    applied = store_migrate.migrate(dsn, target=target)
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        click.echo("schema is up to date")
