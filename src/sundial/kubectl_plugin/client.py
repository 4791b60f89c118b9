"""The API server as the plugin sees it: the user's kubeconfig, their RBAC, plain dicts.

``connect`` reads the kubeconfig the way kubectl does: ``--kubeconfig``, else every file in
``$KUBECONFIG`` (merged), else ``~/.kube/config``; ``--context`` picks a context, and the
namespace is ``-n``, else the context's, else ``default``. Inside a Pod with no kubeconfig it
uses the Pod's ServiceAccount.

Every API error becomes a ``outcome.PluginError`` that says what to do: a missing resource
type means the CRDs are not installed; 403 names the verb and resource RBAC must allow; 404
names the object. Objects are plain dicts, as ``kubectl get -o json`` prints them.
"""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import urllib3
from kubernetes import client as kube_client
from kubernetes import config as kube_config
from kubernetes import watch as kube_watch

from sundial.api import common, crd
from sundial.kubectl_plugin import outcome

__all__ = [
    "RESOURCES",
    "Cluster",
    "Impersonation",
    "Resource",
    "Target",
    "connect",
    "resource_named",
]

MERGE_PATCH: Final = "application/merge-patch+json"
#: The history API's resource, as RBAC and kubectl name it.
HISTORY_RESOURCE: Final = "runs.history.sundial.dev"
_CRD_NAMES: Final = "crd/scheduledjobs.sundial.dev crd/jobruns.sundial.dev"
#: Two waits, as in the README: ``--for=condition`` alone fails at once on a CRD whose
#: conditions the apiserver has not written yet (``sundial.localdev.crds``).
CRDS_HINT: Final = (
    "install them first: kubectl apply --server-side -f crds/ && "
    f"kubectl wait --for=jsonpath='{{.status.conditions[0].type}}' {_CRD_NAMES} && "
    f"kubectl wait --for=condition=Established {_CRD_NAMES}"
)


@dataclass(frozen=True)
class Resource:
    """One of Sundial's kinds, with every name kubectl accepts for it."""

    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    printer_columns: tuple[dict[str, Any], ...]

    @property
    def full_name(self) -> str:
        """``jobruns.sundial.dev``, as RBAC rules and kubectl's messages name it."""
        return f"{self.plural}.{common.GROUP}"

    @property
    def type_name(self) -> str:
        """``jobrun.sundial.dev``, the prefix of ``-o name``."""
        return f"{self.singular}.{common.GROUP}"


RESOURCES: Final = {
    resource.kind: Resource(
        kind=resource.kind,
        plural=resource.plural,
        singular=resource.singular,
        short_names=resource.short_names,
        printer_columns=resource.printer_columns,
    )
    for resource in crd.RESOURCES
}
SCHEDULED_JOB: Final = RESOURCES["ScheduledJob"]
JOB_RUN: Final = RESOURCES["JobRun"]


def resource_named(word: str) -> Resource:
    """The resource ``word`` names (``sj``, ``scheduledjobs``, ``jobrun.sundial.dev`` …)."""
    lowered = word.lower().removesuffix(f".{common.GROUP}")
    for resource in RESOURCES.values():
        if lowered in {resource.plural, resource.singular, resource.kind.lower()}:
            return resource
        if lowered in resource.short_names:
            return resource
    names = ", ".join(
        f"{r.short_names[0]} ({r.plural})" for r in RESOURCES.values() if r.short_names
    )
    raise outcome.PluginError(f"unknown resource type {word!r}: use one of {names}", outcome.USAGE)


@dataclass(frozen=True)
class Target:
    """What a request was about, for the error message."""

    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None


class Cluster:
    """The API calls the verbs make; each raises ``PluginError`` on failure."""

    def __init__(self, api_client: kube_client.ApiClient, namespace: str) -> None:
        self.api_client = api_client
        #: The namespace a verb works in unless told otherwise.
        self.namespace = namespace
        # Any: the client's stubs type custom objects and raw responses as ``object``/``str``.
        self.custom: Any = kube_client.CustomObjectsApi(api_client)
        self.core: Any = kube_client.CoreV1Api(api_client)
        self._raw: Any = api_client

    def close(self) -> None:
        self._raw.close()

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        namespace = namespace or self.namespace
        target = Target("get", resource.full_name, namespace, name)
        with translated(target):
            body: dict[str, Any] = self.custom.get_namespaced_custom_object(
                common.GROUP, common.VERSION, namespace, resource.plural, name
            )
        return body

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """The list object (``items`` and ``metadata.resourceVersion``); ``namespace`` None:
        every namespace."""
        options: dict[str, Any] = {}
        if label_selector:
            options["label_selector"] = label_selector
        if field_selector:
            options["field_selector"] = field_selector
        with translated(Target("list", resource.full_name, namespace)):
            if namespace is None:
                found: dict[str, Any] = self.custom.list_cluster_custom_object(
                    common.GROUP, common.VERSION, resource.plural, **options
                )
            else:
                found = self.custom.list_namespaced_custom_object(
                    common.GROUP, common.VERSION, namespace, resource.plural, **options
                )
        return found

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        created = self.create_if_absent(resource, namespace, body, exists_ok=False)
        assert created is not None
        return created

    def create_if_absent(
        self, resource: Resource, namespace: str, body: Mapping[str, Any], *, exists_ok: bool = True
    ) -> dict[str, Any] | None:
        """The created object; None if one of that name exists already (when ``exists_ok``)."""
        name = body.get("metadata", {}).get("name")
        with translated(Target("create", resource.full_name, namespace, name)):
            try:
                created: dict[str, Any] = self.custom.create_namespaced_custom_object(
                    common.GROUP, common.VERSION, namespace, resource.plural, dict(body)
                )
            except kube_client.ApiException as error:
                if error.status == 409 and exists_ok:
                    return None
                raise
        return created

    def patch(
        self, resource: Resource, name: str, patch: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of the object."""
        namespace = namespace or self.namespace
        with translated(Target("patch", resource.full_name, namespace, name)):
            patched: dict[str, Any] = self.custom.patch_namespaced_custom_object(
                common.GROUP,
                common.VERSION,
                namespace,
                resource.plural,
                name,
                dict(patch),
                _content_type=MERGE_PATCH,
            )
        return patched

    def watch(
        self,
        resource: Resource,
        namespace: str,
        *,
        field_selector: str,
        resource_version: str,
        timeout_seconds: int,
    ) -> Iterator[dict[str, Any]]:
        """Watch events (``{"type": ..., "object": {...}}``) from ``resource_version``."""
        stream: Any = kube_watch.Watch()  # type: ignore[no-untyped-call]
        with translated(Target("watch", resource.full_name, namespace)):
            yield from stream.stream(
                self.custom.list_namespaced_custom_object,
                common.GROUP,
                common.VERSION,
                namespace,
                resource.plural,
                field_selector=field_selector,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=False,
            )

    def pods(self, namespace: str, label_selector: str) -> builtins.list[Any]:
        with translated(Target("list", "pods", namespace)):
            found = self.core.list_namespaced_pod(namespace, label_selector=label_selector)
        return list(found.items)

    def pod_log(self, namespace: str, name: str, *, follow: bool = False) -> Iterator[bytes]:
        """The Pod's log, as it arrives when ``follow``."""
        with translated(Target("get", "pods/log", namespace, name)):
            response = self.core.read_namespaced_pod_log(
                name, namespace, follow=follow, _preload_content=False
            )
            try:
                yield from response.stream(4096)
            finally:
                response.release_conn()

    def get_path(self, target: Target, path: str, query: Mapping[str, str]) -> Any:
        """``GET`` an API path of the API server (an aggregated API's, say); the decoded JSON
        answer. Errors are worded for ``target``."""
        with translated(target):
            method, url, headers, body, post = self._raw.param_serialize(
                "GET",
                path,
                query_params=list(query.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self._raw.call_api(method, url, headers, body, post)
            data = response.read()
            if response.status >= 400:
                raise kube_client.ApiException(
                    status=response.status, reason=response.reason, body=data
                )
        return json.loads(data)


class translated:
    """Turns what the client raises into a ``PluginError`` that says what to do."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, _traceback: Any) -> None:
        if error is None or isinstance(error, outcome.PluginError):
            return
        if isinstance(error, kube_client.ApiException):
            raise api_error(self.target, error) from error
        if isinstance(error, urllib3.exceptions.HTTPError | OSError):
            raise outcome.PluginError(
                f"cannot reach the API server ({error}); check the cluster is up and "
                "your kubeconfig's server address (kubectl cluster-info)",
                outcome.UNREACHABLE,
            ) from error


def api_error(target: Target, error: kube_client.ApiException) -> outcome.PluginError:
    """The message and exit code for one failed request."""
    status: dict[str, Any] = {}
    try:
        status = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        status = {}
    message = str(status.get("message") or error.reason or "").strip()
    where = f" in namespace {target.namespace}" if target.namespace else ""
    history = target.resource == HISTORY_RESOURCE
    if error.status == 403:
        # The chart aggregates reading history into view; the role of its own is for groups.
        hint = (
            " (the view role has it with the chart installed, or the chart's "
            "RELEASE-sundial-history role)"
            if history
            else ""
        )
        return outcome.PluginError(
            f"forbidden: {message}. Ask for an RBAC rule that allows verb {target.verb!r} on "
            f"{target.resource!r}{where}{hint}",
            outcome.FORBIDDEN,
        )
    if error.status == 404 and history:
        return outcome.PluginError(
            f"the API server serves no {HISTORY_RESOURCE}: the history API is not installed "
            "(the chart's historyApi.enabled, and its APIService v1alpha1.history.sundial.dev)",
            outcome.NOT_FOUND,
        )
    if error.status == 404:
        details = status.get("details") or {}
        if target.name is not None and details.get("name"):
            return outcome.PluginError(
                f"{target.resource} {target.name!r} not found{where}; list what there is with "
                f"kubectl sundial get {target.resource.split('.')[0]}",
                outcome.NOT_FOUND,
            )
        if target.resource.endswith(common.GROUP):
            return outcome.PluginError(
                f"the server has no resource type {target.resource}: the Sundial CRDs are not "
                f"installed; {CRDS_HINT}",
                outcome.NOT_FOUND,
            )
        return outcome.PluginError(
            f"{target.resource} {target.name or ''} not found{where}".replace("  ", " "),
            outcome.NOT_FOUND,
        )
    if error.status == 401:
        return outcome.PluginError(
            f"the API server did not accept your credentials ({message}); refresh them "
            "(your kubeconfig's user) and try again",
            outcome.FORBIDDEN,
        )
    if error.status in (502, 503) and history:
        return outcome.PluginError(
            f"the history API cannot answer now ({message or error.reason}); is the Sundial "
            "operator running? kubectl get apiservice v1alpha1.history.sundial.dev says why "
            "it is not Available",
            outcome.UNREACHABLE,
        )
    if error.status == 422:
        return outcome.PluginError(f"the API server refused it: {message}", outcome.FAILED)
    return outcome.PluginError(
        f"{target.verb} {target.resource}{where} failed: {error.status} {message}",
        outcome.FAILED,
    )


@dataclass(frozen=True)
class Impersonation:
    """Whom to act as (kubectl's ``--as`` and ``--as-group``): every request then carries the
    ``Impersonate-User`` and ``Impersonate-Group`` headers, and the API server checks that the
    kubeconfig's own user may impersonate them before RBAC judges the request as theirs."""

    user: str | None = None
    group: str | None = None

    def apply(self, api_client: kube_client.ApiClient) -> None:
        if self.user is not None:
            api_client.set_default_header("Impersonate-User", self.user)  # type: ignore[no-untyped-call]
        if self.group is not None:
            api_client.set_default_header("Impersonate-Group", self.group)  # type: ignore[no-untyped-call]


def connect(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    *,
    impersonate: Impersonation | None = None,
) -> Cluster:
    """A client for the cluster of the kubeconfig (or the Pod's ServiceAccount)."""
    cluster = _connect(kubeconfig, context, namespace)
    if impersonate is not None:
        impersonate.apply(cluster.api_client)
    return cluster


def _connect(kubeconfig: str | None, context: str | None, namespace: str | None) -> Cluster:
    files = _kubeconfig_files(kubeconfig)
    existing = [path for path in files if Path(path).expanduser().is_file()]
    if not existing:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            kube_config.load_incluster_config()  # type: ignore[no-untyped-call]
            return Cluster(kube_client.ApiClient(), namespace or _pod_namespace())
        raise outcome.PluginError(
            f"no kubeconfig found (looked at {', '.join(files)}); pass --kubeconfig FILE or "
            "set KUBECONFIG, as for kubectl",
            outcome.UNREACHABLE,
        )
    config_file = os.pathsep.join(existing)
    try:
        contexts, current = kube_config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=config_file
        )
        chosen = current
        if context is not None:
            chosen = next((c for c in contexts if c.get("name") == context), None)
            if chosen is None:
                names = ", ".join(str(c.get("name")) for c in contexts) or "none"
                raise outcome.PluginError(
                    f"context {context!r} is not in your kubeconfig (it has: {names})",
                    outcome.USAGE,
                )
        api_client = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=config_file, context=context
        )
    except kube_config.ConfigException as error:
        raise outcome.PluginError(
            f"cannot use the kubeconfig {config_file}: {error}", outcome.UNREACHABLE
        ) from error
    default = ((chosen or {}).get("context") or {}).get("namespace") or "default"
    return Cluster(api_client, namespace or default)


def _kubeconfig_files(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    from_environment = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    return from_environment or [str(Path("~/.kube/config").expanduser())]


def _pod_namespace() -> str:
    path = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    return path.read_text().strip() if path.is_file() else "default"
