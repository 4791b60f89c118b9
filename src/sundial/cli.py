"""The ``sundial`` command: the one entry point for operators, runners and people."""

from __future__ import annotations

import pathlib

import click

import sundial
from sundial.api import crd


@click.group()
@click.version_option(sundial.__version__, prog_name="sundial")
def main() -> None:
    """Sundial: a Kubernetes-native job scheduler on PostgreSQL."""


@main.command()
@click.option(
    "--output",
    "output",
    type=click.Path(file_okay=False, writable=True, path_type=pathlib.Path),
    default=None,
    help="Write one <plural>.sundial.dev.yaml per kind into this directory instead of stdout.",
)
def crds(output: pathlib.Path | None) -> None:
    """Print (or write) the CustomResourceDefinitions generated from sundial.api."""
    if output is None:
        click.echo("---\n".join(crd.render(resource) for resource in crd.RESOURCES), nl=False)
        return
    output.mkdir(parents=True, exist_ok=True)
    for resource in crd.RESOURCES:
        path = output / crd.file_name(resource)
        path.write_text(crd.render(resource), encoding="utf-8")
        click.echo(f"wrote {path}")
