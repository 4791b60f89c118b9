"""The operator reaches the API server from a Pod at the address Kubernetes gives every Pod
(``KUBERNETES_SERVICE_HOST``/``_PORT``), not at ``kubernetes.default.svc``, which needs
cluster DNS (handlers.login)."""

from __future__ import annotations

from sundial.operator import handlers


def test_the_server_comes_from_the_pods_service_environment() -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert handlers.in_cluster_server(environ) == "https://10.96.0.1:443"


def test_an_ipv6_service_address_is_bracketed() -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "fd00:10:96::1", "KUBERNETES_SERVICE_PORT": "443"}
    assert handlers.in_cluster_server(environ) == "https://[fd00:10:96::1]:443"


def test_without_both_variables_there_is_no_in_cluster_server() -> None:
    assert handlers.in_cluster_server({}) is None
    assert handlers.in_cluster_server({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}) is None
    assert handlers.in_cluster_server({"KUBERNETES_SERVICE_PORT": "443"}) is None
