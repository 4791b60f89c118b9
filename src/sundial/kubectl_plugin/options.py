"""The options every verb takes, as kubectl spells them: ``--kubeconfig``, ``--context``,
``-n/--namespace``, and ``--as``/``--as-group`` to act as another user (impersonation, which
RBAC must grant: the ``impersonate`` verb on users and groups). kubectl passes a plugin its
arguments as they were typed, so they belong to each verb (``kubectl sundial get jr -n
prod``), not only to the group."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from sundial.kubectl_plugin import client, outcome

__all__ = ["Connection", "complete_names", "connection_options", "now"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Connection:
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    as_user: str | None = None
    as_group: str | None = None

    def connect(self) -> client.Cluster:
        return client.connect(
            self.kubeconfig,
            self.context,
            self.namespace,
            impersonate=client.Impersonation(self.as_user, self.as_group),
        )


def connection_options(function: F) -> F:
    """Add the kubectl connection options; the command gets them as ``connection``."""

    @click.option(
        "--kubeconfig",
        envvar=None,
        metavar="FILE",
        help="The kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config).",
    )
    @click.option("--context", metavar="NAME", help="The kubeconfig context to use.")
    @click.option(
        "-n", "--namespace", metavar="NAMESPACE", help="The namespace (default: the context's)."
    )
    @click.option("--as", "as_user", metavar="USER", help="Act as this user (impersonation).")
    @click.option("--as-group", metavar="GROUP", help="Act as a member of this group (with --as).")
    @functools.wraps(function)
    def wrapper(
        *args: Any,
        kubeconfig: str | None,
        context: str | None,
        namespace: str | None,
        as_user: str | None,
        as_group: str | None,
        **kw: Any,
    ) -> Any:
        if as_group is not None and as_user is None:
            raise outcome.PluginError(
                "--as-group needs --as: name the user to act as (as kubectl requires)",
                outcome.USAGE,
            )
        connection = Connection(kubeconfig, context, namespace, as_user, as_group)
        return function(*args, connection=connection, **kw)

    return wrapper  # type: ignore[return-value]


def complete_names(
    kind: str,
) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """Shell completion of the names of ``kind`` objects in the namespace typed so far (or the
    context's); nothing when the cluster cannot be asked (completion must never fail)."""

    def complete(context: click.Context, _parameter: click.Parameter, incomplete: str) -> list[str]:
        params = context.params
        try:
            cluster = client.connect(
                params.get("kubeconfig"),
                params.get("context"),
                params.get("namespace"),
                impersonate=client.Impersonation(params.get("as_user"), params.get("as_group")),
            )
            try:
                listed = cluster.list(client.RESOURCES[kind], cluster.namespace)
            finally:
                cluster.close()
        except Exception:
            return []
        names = (str(item["metadata"]["name"]) for item in listed.get("items") or [])
        return sorted(name for name in names if name.startswith(incomplete))

    return complete


def now() -> datetime.datetime:
    """The time ages are measured from (the local clock, as kubectl measures them)."""
    return datetime.datetime.now(datetime.UTC)
