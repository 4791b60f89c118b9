"""``kubectl sundial get sj|jr [NAME…]``: Sundial's objects in kubectl's table, or ``-o``."""

from __future__ import annotations

import click

from sundial.kubectl_plugin import client, options, outcome, output

__all__ = ["get"]


@click.command("get")
@click.argument(
    "resource_type",
    metavar="sj|jr",
    shell_complete=lambda _c, _p, incomplete: [
        word for word in ("sj", "jr", "scheduledjobs", "jobruns") if word.startswith(incomplete)
    ],
)
@click.argument("names", nargs=-1)
@options.connection_options
@click.option("-A", "--all-namespaces", is_flag=True, help="List across every namespace.")
@click.option("-l", "--selector", metavar="SELECTOR", help="Filter by labels (app=x,tier!=y).")
@click.option(
    "-o", "--output", "output_format", type=click.Choice(output.FORMATS), help="Output format."
)
def get(
    resource_type: str,
    names: tuple[str, ...],
    connection: options.Connection,
    all_namespaces: bool,
    selector: str | None,
    output_format: str | None,
) -> None:
    """List ScheduledJobs (sj) or JobRuns (jr), or show the ones NAMEd.

    Columns are the CRDs' printer columns; ``-o wide`` adds QUEUE and HANDLER (sj) or FIRE TIME,
    POD and WAITING (jr: why a run that is not running waits).
    """
    resource = client.resource_named(resource_type)
    if names and all_namespaces:
        raise outcome.PluginError(
            "a name cannot be combined with -A: name the namespace with -n", outcome.USAGE
        )
    cluster = connection.connect()
    try:
        if names:
            objects = [cluster.get(resource, name) for name in names]
        else:
            namespace = None if all_namespaces else cluster.namespace
            listed = cluster.list(resource, namespace, label_selector=selector)
            objects = sorted(
                listed.get("items") or [],
                key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]),
            )
            if not objects and output_format not in ("json", "yaml"):
                where = "any namespace" if all_namespaces else f"namespace {cluster.namespace}"
                click.echo(f"No {resource.plural} found in {where}.", err=True)
                return
        text = output.render(
            resource,
            objects,
            output_format,
            now=options.now(),
            single=len(names) == 1,
            with_namespace=all_namespaces,
        )
        if text:
            click.echo(text)
    finally:
        cluster.close()
