"""``sundial pods``: Sundial's Pods, outside a running launcher."""

from __future__ import annotations

import click

from sundial.cli.app import main


@main.group("pods")
def pods_() -> None:
    """Sundial's Pods, outside a running launcher."""


@pods_.command("release")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Namespace to release Pods in (repeatable; default: every namespace).",
)
@click.option("--kubeconfig", default=None, help="Default: in-cluster config, else ~/.kube/config.")
@click.option("--instance", default="sundial", show_default=True, help="Label of Sundial's Pods.")
def pods_release(namespaces: tuple[str, ...], kubeconfig: str | None, instance: str) -> None:
    """Remove Sundial's outcome finalizer from every Pod of the installation.

    For uninstalling: run it after the operator (or `sundial pod-launcher`) is gone, so no
    Pod waits for a launcher that will not come back. Pods still running keep running; their
    outcome is not recorded (docs/adr/0023-pod-outcome-finalizer.md).
    """
    import asyncio

    from kubernetes import config as kube_config

    from sundial.pods import launcher as launcher_module

    api_client = kube_config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    try:
        released = asyncio.run(
            launcher_module.release_all(api_client, namespaces or None, instance)
        )
    finally:
        api_client.close()
    for name in released:
        click.echo(f"released {name}")
    click.echo(f"{len(released)} Pods released", err=True)
