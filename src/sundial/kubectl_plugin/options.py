"""The options every verb takes, as kubectl spells them: ``--kubeconfig``, ``--context``,
``-n/--namespace``. kubectl passes a plugin its arguments as they were typed, so they belong
to each verb (``kubectl sundial get jr -n prod``), not only to the group."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from sundial.kubectl_plugin import client

__all__ = ["Connection", "connection_options", "now"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Connection:
    kubeconfig: str | None
    context: str | None
    namespace: str | None

    def connect(self) -> client.Cluster:
        return client.connect(self.kubeconfig, self.context, self.namespace)


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
    @functools.wraps(function)
    def wrapper(
        *args: Any, kubeconfig: str | None, context: str | None, namespace: str | None, **kw: Any
    ) -> Any:
        return function(*args, connection=Connection(kubeconfig, context, namespace), **kw)

    return wrapper  # type: ignore[return-value]


def now() -> datetime.datetime:
    """The time ages are measured from (the local clock, as kubectl measures them)."""
    return datetime.datetime.now(datetime.UTC)
