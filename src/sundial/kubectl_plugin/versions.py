"""``kubectl sundial version``: the plugin's version and what the cluster serves.

Every line the server part prints comes from discovery (``/version``, ``/apis/sundial.dev``,
``/apis/history.sundial.dev``), which any authenticated user may read, so it answers for a
tenant with no cluster-wide rights as well as for an administrator.
"""

from __future__ import annotations

from importlib import metadata

import click

from sundial.kubectl_plugin import client, options, outcome

__all__ = ["version"]

_GROUP = "sundial.dev"
_HISTORY_GROUP = "history.sundial.dev"
#: The distributions the plugin is installed from: with the server (``pip install
#: sundial-scheduler``), or alone (``pipx install kubectl-sundial``, krew).
DISTRIBUTIONS = ("sundial-scheduler", "kubectl-sundial")


def client_version() -> str:
    for distribution in DISTRIBUTIONS:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return f"unknown (run from a source tree; neither {' nor '.join(DISTRIBUTIONS)} is installed)"


@click.command("version")
@click.option("--client", "client_only", is_flag=True, help="Print the plugin's version only.")
@options.connection_options
def version(client_only: bool, connection: options.Connection) -> None:
    """Print the plugin's version, the cluster's Kubernetes version, and the Sundial API
    versions it serves (the CRDs, and the history API the chart registers)."""
    click.echo(f"Client Version: {client_version()}")
    if client_only:
        return
    cluster = connection.connect()
    try:
        kubernetes = cluster.get_path(client.Target("get", "version"), "/version", {})
        click.echo(f"Kubernetes Version: {kubernetes.get('gitVersion', 'unknown')}")
        click.echo(f"Sundial API: {_served(cluster, _GROUP, 'CRDs not installed')}")
        click.echo(f"History API: {_served(cluster, _HISTORY_GROUP, 'not served')}")
    finally:
        cluster.close()


def _served(cluster: client.Cluster, group: str, absent: str) -> str:
    """``group/v1alpha1`` (every version served, the preferred one first), or ``absent``
    with what to do when the API server does not serve the group."""
    try:
        found = cluster.get_path(client.Target("get", group), f"/apis/{group}", {})
    except outcome.PluginError as error:
        if error.code != outcome.NOT_FOUND:
            raise
        return f"{absent} (helm install the sundial chart: README, Install)"
    preferred = (found.get("preferredVersion") or {}).get("version")
    served = [str(v.get("version")) for v in found.get("versions") or []]
    ordered = [v for v in served if v == preferred] + [v for v in served if v != preferred]
    return ", ".join(f"{group}/{v}" for v in ordered) or absent
