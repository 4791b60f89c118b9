"""The OCI archive writer: layout, digests, annotations, and the same tree -> the same digest."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies

from sundial.localdev import oci_archive

WRITER = pathlib.Path(oci_archive.__file__)
REFERENCE = "localhost/sundial/test:0123456789ab"


def make_tree(root: pathlib.Path) -> pathlib.Path:
    """A small root filesystem with every kind of entry a Debian tree has."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_bytes(b"#!/bin/sh\necho tool\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "bin" / "alias").symlink_to("tool")
    os.link(root / "bin" / "tool", root / "bin" / "hardlink")
    (root / "etc").mkdir()
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (root / "usr" / "lib").mkdir(parents=True)
    (root / "lib").symlink_to("usr/lib")  # a symlink to a directory: packed, not followed
    (root / "usr" / "lib" / "data.bin").write_bytes(bytes(range(256)) * 64)
    (root / "tmp").mkdir()
    (root / "tmp").chmod(0o1777)
    (root / "empty").mkdir()
    return root


def members(archive: pathlib.Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {
            member.name: tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar
            if member.isreg()
        }


def layer_of(archive: pathlib.Path) -> tarfile.TarFile:
    blobs = members(archive)
    index = json.loads(blobs["index.json"])
    manifest = json.loads(blobs["blobs/sha256/" + index["manifests"][0]["digest"][7:]])
    layer = blobs["blobs/sha256/" + manifest["layers"][0]["digest"][7:]]
    return tarfile.open(fileobj=io.BytesIO(layer))


def write(
    rootfs: pathlib.Path, out: pathlib.Path, reference: str = REFERENCE, **config: Any
) -> oci_archive.Written:
    return oci_archive.write(rootfs, out, reference, oci_archive.ImageConfig(**config))


def test_layout_index_and_annotations(tmp_path: pathlib.Path) -> None:
    archive = tmp_path / "image.tar"
    written = write(make_tree(tmp_path / "rootfs"), archive, cmd=["sh"], user="65532:65532")
    blobs = members(archive)
    assert json.loads(blobs["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    assert sorted(name for name in blobs if not name.startswith("blobs/sha256/")) == [
        "index.json",
        "oci-layout",
    ]
    index = json.loads(blobs["index.json"])
    assert (index["schemaVersion"], index["mediaType"]) == (2, oci_archive.MEDIA_INDEX)
    [descriptor] = index["manifests"]
    assert descriptor["digest"] == written.manifest_digest
    assert descriptor["platform"] == {"architecture": "amd64", "os": "linux"}
    assert descriptor["annotations"] == {
        "io.containerd.image.name": REFERENCE,
        "org.opencontainers.image.ref.name": "0123456789ab",
    }
    manifest = json.loads(blobs["blobs/sha256/" + written.manifest_digest[7:]])
    assert manifest["mediaType"] == oci_archive.MEDIA_MANIFEST
    config = json.loads(blobs["blobs/sha256/" + manifest["config"]["digest"][7:]])
    assert config["config"]["Cmd"] == ["sh"]
    assert config["config"]["User"] == "65532:65532"
    assert config["config"]["Env"] == [oci_archive.DEFAULT_PATH]
    assert config["rootfs"] == {"type": "layers", "diff_ids": [written.layer_digest]}
    assert len(blobs) == 5  # layout, index, manifest, config, one layer: nothing stray


def test_every_blob_is_named_by_its_sha256_and_sized_by_its_descriptor(
    tmp_path: pathlib.Path,
) -> None:
    archive = tmp_path / "image.tar"
    written = write(make_tree(tmp_path / "rootfs"), archive)
    blobs = members(archive)
    for name, data in blobs.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.removeprefix("blobs/sha256/")
    manifest = json.loads(blobs["blobs/sha256/" + written.manifest_digest[7:]])
    for descriptor in [manifest["config"], *manifest["layers"]]:
        assert len(blobs["blobs/sha256/" + descriptor["digest"][7:]]) == descriptor["size"]
    assert manifest["layers"][0]["size"] == written.layer_size
    checked = oci_archive.verify(archive)
    assert checked.references == (REFERENCE,)
    assert checked.manifest_digests == (written.manifest_digest,)


def test_the_layer_holds_the_tree_with_mtime_zero_and_numeric_owners(
    tmp_path: pathlib.Path,
) -> None:
    rootfs = make_tree(tmp_path / "rootfs")
    archive = tmp_path / "image.tar"
    write(rootfs, archive)
    with layer_of(archive) as layer:
        entries = {member.name: member for member in layer}
        assert list(entries) == sorted(entries, key=lambda name: name.split("/"))
        assert entries["bin/alias"].issym() and entries["bin/alias"].linkname == "tool"
        assert entries["lib"].issym() and entries["lib"].linkname == "usr/lib"
        assert "lib/data.bin" not in entries  # the directory symlink was not followed
        assert entries["bin/hardlink"].islnk() or entries["bin/tool"].islnk()
        assert entries["bin/tool"].mode & 0o777 == 0o755
        assert entries["tmp"].isdir() and entries["tmp"].mode & 0o7777 == 0o1777
        assert entries["empty"].isdir()
        for member in entries.values():
            assert member.mtime == 0
            assert (member.uname, member.gname) == ("", "")
            assert member.uid == os.lstat(rootfs / member.name).st_uid
        data = layer.extractfile(entries["usr/lib/data.bin"])
        assert data is not None and data.read() == bytes(range(256)) * 64


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_numeric_owners_are_kept(tmp_path: pathlib.Path) -> None:
    rootfs = make_tree(tmp_path / "rootfs")
    os.chown(rootfs / "etc" / "passwd", 999, 998)
    archive = tmp_path / "image.tar"
    write(rootfs, archive)
    with layer_of(archive) as layer:
        passwd = layer.getmember("etc/passwd")
        assert (passwd.uid, passwd.gid) == (999, 998)


def test_same_tree_same_digest_whatever_the_mtimes_and_the_path(tmp_path: pathlib.Path) -> None:
    first = make_tree(tmp_path / "one")
    second = tmp_path / "elsewhere" / "two"
    second.parent.mkdir()
    subprocess.run(["cp", "-a", str(first), str(second)], check=True)  # keeps the hard link
    for path in second.rglob("*"):
        os.utime(path, (1_000_000, 2_000_000), follow_symlinks=False)
    one = write(first, tmp_path / "one.tar")
    two = write(second, tmp_path / "two.tar")
    assert one == two
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()


def test_a_change_of_content_or_config_changes_the_digest(tmp_path: pathlib.Path) -> None:
    rootfs = make_tree(tmp_path / "rootfs")
    base = write(rootfs, tmp_path / "a.tar")
    assert write(rootfs, tmp_path / "b.tar", cmd=["sh"]).manifest_digest != base.manifest_digest
    assert write(rootfs, tmp_path / "c.tar").manifest_digest == base.manifest_digest
    (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    changed = write(rootfs, tmp_path / "d.tar")
    assert changed.layer_digest != base.layer_digest
    (rootfs / "etc" / "passwd").chmod(0o600)
    assert write(rootfs, tmp_path / "e.tar").layer_digest != changed.layer_digest


NAMES = strategies.text(alphabet="abcxyz019._-", min_size=1, max_size=8).filter(
    lambda name: name not in (".", "..")
)
TREES = strategies.dictionaries(
    strategies.lists(NAMES, min_size=1, max_size=3).map("/".join),
    strategies.binary(max_size=64),
    max_size=8,
)


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(tree=TREES, mtime=strategies.integers(min_value=0, max_value=2**31))
def test_any_tree_round_trips_and_its_digest_ignores_mtimes(
    tmp_path_factory: pytest.TempPathFactory, tree: dict[str, bytes], mtime: int
) -> None:
    """Oracle: the layer unpacks to exactly the tree, and a touched copy gives the same bytes."""
    scratch = tmp_path_factory.mktemp("tree")
    rootfs = scratch / "rootfs"
    rootfs.mkdir()
    files = {}
    for relative, content in tree.items():
        path = rootfs / relative
        # a name that is already a file's cannot also be a directory: skip the clash
        if any(parent.is_file() for parent in path.parents) or path.is_dir():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        files[relative] = content
    first = write(rootfs, scratch / "first.tar")
    for path in rootfs.rglob("*"):
        os.utime(path, (mtime, mtime))
    assert write(rootfs, scratch / "second.tar") == first
    with layer_of(scratch / "first.tar") as layer:
        unpacked = {
            member.name: layer.extractfile(member).read()  # type: ignore[union-attr]
            for member in layer
            if member.isreg()
        }
    assert unpacked == files
    oci_archive.verify(scratch / "first.tar")


def rewrite(archive: pathlib.Path, change: Any) -> None:
    """Apply ``change(name, data) -> (name, data) | None`` to every member of the archive."""
    blobs = members(archive)
    with tarfile.open(archive, "w") as tar:
        for name, data in blobs.items():
            changed = change(name, data)
            if changed is not None:
                info = tarfile.TarInfo(changed[0])
                info.size = len(changed[1])
                tar.addfile(info, io.BytesIO(changed[1]))


def corrupt_layer(name: str, data: bytes) -> tuple[str, bytes]:
    if name.startswith("blobs/") and len(data) > 4096:
        return name, data[:-1] + bytes([data[-1] ^ 1])
    return name, data


def unnamed_index(name: str, data: bytes) -> tuple[str, bytes]:
    if name == "index.json":
        index = json.loads(data)
        index["manifests"][0].pop("annotations")
        return name, json.dumps(index).encode()
    return name, data


def drop_layout(name: str, data: bytes) -> tuple[str, bytes] | None:
    return None if name == "oci-layout" else (name, data)


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (corrupt_layer, "has sha256"),
        (unnamed_index, "no image name annotation"),
        (drop_layout, "no oci-layout"),
    ],
)
def test_verify_names_what_is_wrong(tmp_path: pathlib.Path, change: Any, complaint: str) -> None:
    archive = tmp_path / "image.tar"
    write(make_tree(tmp_path / "rootfs"), archive)
    rewrite(archive, change)
    with pytest.raises(oci_archive.ArchiveError, match=complaint):
        oci_archive.verify(archive)


def test_rename_sets_both_annotations_and_keeps_every_blob(tmp_path: pathlib.Path) -> None:
    archive = tmp_path / "image.tar"
    write(make_tree(tmp_path / "rootfs"), archive)
    before = {name: data for name, data in members(archive).items() if name != "index.json"}
    oci_archive.name(archive, "localhost/sundial/other:feedface")
    after = members(archive)
    assert {name: data for name, data in after.items() if name != "index.json"} == before
    annotations = json.loads(after["index.json"])["manifests"][0]["annotations"]
    assert annotations == oci_archive.index_annotations("localhost/sundial/other:feedface")
    assert oci_archive.verify(archive).references == ("localhost/sundial/other:feedface",)


@pytest.mark.parametrize(
    ("reference", "tag"),
    [
        ("localhost/sundial/pause:1a2b", "1a2b"),
        ("localhost:5000/busybox", "latest"),
        ("busybox:1.36", "1.36"),
    ],
)
def test_tag_of(reference: str, tag: str) -> None:
    assert oci_archive.tag_of(reference) == tag


def test_a_digest_reference_is_refused() -> None:
    with pytest.raises(ValueError, match="pins a digest"):
        oci_archive.tag_of("busybox@sha256:" + "0" * 64)


def test_the_script_runs_without_the_package_and_rejects_bad_flags(
    tmp_path: pathlib.Path,
) -> None:
    """hack/images/build runs the module by path, with no virtual environment and no sundial."""
    rootfs = make_tree(tmp_path / "rootfs")
    archive = tmp_path / "image.tar"
    command = [sys.executable, "-I", str(WRITER)]
    written = subprocess.run(
        [*command, str(rootfs), str(archive), "--name", REFERENCE, "--entrypoint", '["/pause"]'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert REFERENCE in written.stdout
    checked = subprocess.run(
        [*command, "--verify", str(archive)], capture_output=True, text=True, check=True
    )
    assert "valid" in checked.stdout
    refused = subprocess.run(
        [*command, str(rootfs), str(archive), "--name", REFERENCE, "--cmd", '"sh"'],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2
    assert "--cmd must be a JSON list of strings" in refused.stderr
