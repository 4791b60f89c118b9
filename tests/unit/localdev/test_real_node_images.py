"""The env file of images that hack/images/build prints and node-up imports, as Python reads
it (``sundial.localdev.real_node.read_images``), and the placement on the real node."""

from __future__ import annotations

from pathlib import Path

from sundial.localdev import real_node


def test_image_references_are_read_and_archive_paths_left_out(tmp_path: Path):
    env = tmp_path / "images.env"
    env.write_text(
        "# written by hack/images/build\n"
        "SUNDIAL_IMAGE_PAUSE=localhost/sundial/pause:011b34618f6e\n"
        "SUNDIAL_IMAGE_PAUSE_ARCHIVE=/cache/pause-011b34618f6e.oci.tar\n"
        "export SUNDIAL_IMAGE_BUSYBOX='localhost/sundial/busybox:9e385df9db76'\n"
        'SUNDIAL_IMAGE_RUNNER_ARCHIVE="/cache/runner.oci.tar"\n'
        "SUNDIAL_IMAGE_RUNNER=localhost/sundial/runner:5926ecdc1f2a\n"
        "SOMETHING_ELSE=1\n"
    )

    assert real_node.read_images(env) == {
        "PAUSE": "localhost/sundial/pause:011b34618f6e",
        "BUSYBOX": "localhost/sundial/busybox:9e385df9db76",
        "RUNNER": "localhost/sundial/runner:5926ecdc1f2a",
    }


def test_placement_selects_the_real_node_and_tolerates_only_its_taint():
    placement = real_node.placement()

    assert placement["nodeSelector"] == {real_node.NODE_KIND_LABEL: "real"}
    assert placement["tolerations"] == [
        {"key": real_node.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    ]
