"""What each API failure tells the user to do, and its exit code.

The bodies are the API server's own Status answers (as kube-apiserver 1.35 sends them)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kubernetes.client import ApiException

from sundial.kubectl_plugin import client, outcome


def failure(status: int, body: dict[str, object] | str) -> ApiException:
    error = ApiException(status=status, reason="x")
    error.body = body if isinstance(body, str) else json.dumps(body)
    return error


NO_RESOURCE_TYPE = {
    "kind": "Status",
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}
NO_OBJECT = {
    "kind": "Status",
    "status": "Failure",
    "message": 'jobruns.sundial.dev "nope" not found',
    "reason": "NotFound",
    "details": {"name": "nope", "group": "sundial.dev", "kind": "jobruns"},
    "code": 404,
}
FORBIDDEN = {
    "kind": "Status",
    "status": "Failure",
    "message": 'jobruns.sundial.dev is forbidden: User "system:serviceaccount:t:reader" cannot '
    'list resource "jobruns" in API group "sundial.dev" in the namespace "t"',
    "reason": "Forbidden",
    "details": {"group": "sundial.dev", "kind": "jobruns"},
    "code": 403,
}


@pytest.mark.parametrize(
    ("target", "error", "code", "words"),
    [
        (
            client.Target("list", "jobruns.sundial.dev", "t"),
            failure(404, NO_RESOURCE_TYPE),
            outcome.NOT_FOUND,
            "the Sundial CRDs are not installed; install them first: kubectl apply",
        ),
        (
            client.Target("get", "jobruns.sundial.dev", "t", "nope"),
            failure(404, NO_OBJECT),
            outcome.NOT_FOUND,
            "jobruns.sundial.dev 'nope' not found in namespace t; list what there is",
        ),
        (
            client.Target("list", "jobruns.sundial.dev", "t"),
            failure(403, FORBIDDEN),
            outcome.FORBIDDEN,
            "Ask for an RBAC rule that allows verb 'list' on 'jobruns.sundial.dev' in namespace t",
        ),
        (
            client.Target("list", client.HISTORY_RESOURCE, "team-a"),
            failure(403, FORBIDDEN),
            outcome.FORBIDDEN,
            "verb 'list' on 'runs.history.sundial.dev' in namespace team-a (the view role has it",
        ),
        (
            client.Target("list", client.HISTORY_RESOURCE, "team-a"),
            failure(503, {"message": "the server is currently unable to handle the request"}),
            outcome.UNREACHABLE,
            "is the Sundial operator running? kubectl get apiservice v1alpha1.history.sundial.dev",
        ),
        (
            client.Target("list", client.HISTORY_RESOURCE, "team-a"),
            failure(404, {"message": "the server could not find the requested resource"}),
            outcome.NOT_FOUND,
            "the history API is not installed",
        ),
        (
            client.Target("get", "jobruns.sundial.dev", "t", "x"),
            failure(500, "not json"),
            outcome.FAILED,
            "get jobruns.sundial.dev in namespace t failed: 500",
        ),
    ],
)
def test_api_errors_say_what_to_do(
    target: client.Target, error: ApiException, code: int, words: str
) -> None:
    translated = client.api_error(target, error)
    assert translated.code == code
    assert words in translated.message


def test_a_missing_kubeconfig_names_where_it_looked(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    with pytest.raises(outcome.PluginError) as raised:
        client.connect(None, None, None)
    assert raised.value.code == outcome.UNREACHABLE
    assert str(tmp_path / "a") in raised.value.message and "set KUBECONFIG" in raised.value.message


def test_an_unknown_context_lists_the_known_ones(tmp_path) -> None:
    config = tmp_path / "config"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "dev",
            }
        )
    )
    with pytest.raises(outcome.PluginError, match=r"context 'prod' is not in your kubeconfig"):
        client.connect(str(config), "prod", None)
    cluster = client.connect(str(config), None, None)
    try:
        assert cluster.namespace == "default"
    finally:
        cluster.close()


def test_the_missing_crds_hint_waits_as_the_readme_does() -> None:
    """Both waits, in the README's order: ``--for=condition`` alone fails at once on a CRD
    whose conditions are not written yet (tests/cluster/test_readme_quickstart.py)."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart by hand", 1)[1].split("\n## ", 1)[0]
    waits = re.findall(r"^kubectl wait .*$", quickstart, re.M)
    assert len(waits) == 2
    assert client.CRDS_HINT.endswith(" && ".join(waits))
