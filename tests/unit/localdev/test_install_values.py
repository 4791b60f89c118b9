"""The chart values ``localdev.install`` gives an installation on the real node: the images
built here (never pulled), the node's placement for every Pod, the node's network for the
components, a fresh database password, and clear errors for what it cannot do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sundial.localdev import install as installs
from sundial.localdev import real_node as real_nodes

IMAGES = {
    "BUSYBOX": "localhost/sundial/busybox:1",
    "OPERATOR": "localhost/sundial/operator:abc",
    "EXAMPLES": "localhost/sundial/examples:def",
    "POSTGRES": "localhost/sundial/postgres:123",
}


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"clusters": [{"name": "c", "cluster": {"server": server}}]}))
    return path


def test_values_place_everything_on_the_node_from_local_images(tmp_path: Path) -> None:
    node = real_nodes.RealNode(name="127.0.0.1", images=IMAGES)
    config = kubeconfig(tmp_path, "https://127.0.0.1:41234")

    values = installs.real_node_values(node, config, job_namespaces=["jobs"])
    again = installs.real_node_values(node, config, job_namespaces=["jobs"])

    placement = real_nodes.placement()
    assert values["operator"]["image"] == {
        "repository": "localhost/sundial/operator", "tag": "abc", "pullPolicy": "Never"
    }  # fmt: skip
    assert values["runner"]["image"]["repository"] == "localhost/sundial/examples"
    bundled = values["postgresql"]["bundled"]
    assert bundled["image"]["tag"] == "123"
    for component in (values["operator"], values["runner"], bundled):
        assert component["hostNetwork"] is True
        assert component["nodeSelector"] == placement["nodeSelector"]
        assert component["tolerations"] == placement["tolerations"]
    assert values["jobPods"] == {"namespaces": ["jobs"], **placement}  # on the Pod network
    assert (bundled["host"], bundled["listenAddress"]) == ("127.0.0.1", "127.0.0.1")
    assert {"name": "KUBERNETES_SERVICE_PORT", "value": "41234"} in values["operator"]["extraEnv"]
    assert bundled["password"] != again["postgresql"]["bundled"]["password"]
    assert len(bundled["password"]) == 32
    ports = {values["postgresql"]["port"], values["operator"]["healthPort"],
             values["operator"]["metricsTls"]["port"], values["runner"]["metricsPort"]}  # fmt: skip
    assert len(ports) == 4


def test_values_an_earlier_chart_does_not_know_are_left_out_for_it(tmp_path: Path) -> None:
    """The e2e session installs the previous release's chart, whose schema refuses keys it
    has no values for; this checkout's chart gets them."""
    node = real_nodes.RealNode(name="127.0.0.1", images=IMAGES)
    values = installs.real_node_values(
        node, kubeconfig(tmp_path, "https://127.0.0.1:6443"), job_namespaces=["jobs"]
    )
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    defaults = yaml.safe_load((installs.chart_dir() / "values.yaml").read_text())
    del defaults["operator"]["metricsTls"]
    (earlier / "values.yaml").write_text(yaml.safe_dump(defaults))

    for_earlier = installs._for_chart(values, earlier)
    assert "metricsTls" not in for_earlier["operator"]
    assert for_earlier["operator"]["healthPort"] == values["operator"]["healthPort"]
    assert installs._for_chart(values, installs.chart_dir()) == values


def test_extra_values_merge_into_the_defaults(tmp_path: Path) -> None:
    node = real_nodes.RealNode(name="127.0.0.1", images=IMAGES)
    values = installs.real_node_values(
        node,
        kubeconfig(tmp_path, "https://127.0.0.1:6443"),
        job_namespaces=["jobs"],
        extra={"runner": {"replicas": 2}, "crds": {"keep": False}},
    )
    assert values["runner"]["replicas"] == 2
    assert values["runner"]["hostNetwork"] is True
    assert values["crds"] == {"keep": False}


def test_missing_images_and_a_remote_apiserver_are_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    bare = real_nodes.RealNode(name="127.0.0.1", images={"BUSYBOX": IMAGES["BUSYBOX"]})
    with pytest.raises(installs.InstallError, match="hack/images/build operator examples"):
        installs.real_node_values(
            bare, kubeconfig(tmp_path, "https://127.0.0.1:6443"), job_namespaces=["j"]
        )
    node = real_nodes.RealNode(name="127.0.0.1", images=IMAGES)
    with pytest.raises(installs.InstallError, match=r"reaches only one on 127\.0\.0\.1"):
        installs.real_node_values(
            node, kubeconfig(tmp_path, "https://10.1.2.3:6443"), job_namespaces=["j"]
        )
