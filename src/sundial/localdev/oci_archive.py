"""Write a single-layer OCI image archive from a root filesystem directory, without a registry.

``hack/images/build`` makes the pause, busybox, Python and PostgreSQL images with this module:
a directory tree becomes an OCI image layout (``oci-layout``, ``index.json``, ``blobs/sha256/``)
in one tar file, which ``ctr images import`` and ``buildah pull oci-archive:`` both read.

What it guarantees:

- The same tree gives the same bytes, so the same digests: entries are sorted, every mtime is 0,
  owner names are dropped (numeric owners are kept, so a package's files stay its user's), and
  the image config carries a fixed creation time. An image's digest changes only when its
  content or config does.
- The archive is self-consistent: each blob is named by the sha256 of its bytes, and the sizes
  in the descriptors are the blobs' sizes. :func:`verify` checks exactly that, and the tests use
  it on every archive the build writes.
- The image is named in ``index.json`` by the annotations containerd (``io.containerd.image.name``)
  and the OCI spec (``org.opencontainers.image.ref.name``) read, so an import needs no flags.
- The archive appears whole or not at all: it is written beside its destination and renamed.

It uses the standard library only: the build runs it as a script (``python3
src/sundial/localdev/oci_archive.py ...``) with whatever Python the machine has, before any
virtual environment exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import io
import json
import os
import pathlib
import tarfile
import tempfile
import typing
from collections.abc import Mapping, Sequence

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name"
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"
EPOCH = "1970-01-01T00:00:00Z"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CHUNK = 1 << 20


try:  # as a script, before the package is installed, the module stands alone
    from sundial.errors import SundialError as _Root
except ImportError:  # pragma: no cover - only outside a virtual environment
    _Root = Exception  # type: ignore[misc,assignment]


class ArchiveError(_Root):
    """An archive is not a valid OCI image layout; the message says which part is wrong."""


@dataclasses.dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image config (the OCI ``config`` object)."""

    entrypoint: Sequence[str] | None = None
    cmd: Sequence[str] | None = None
    env: Sequence[str] = ()
    user: str = ""
    workdir: str = ""
    stop_signal: str = ""

    def as_json(self) -> dict[str, object]:
        # a PATH of the image's own replaces the default rather than shadowing it
        default = [] if any(entry.startswith("PATH=") for entry in self.env) else [DEFAULT_PATH]
        config: dict[str, object] = {"Env": [*default, *self.env]}
        if self.entrypoint is not None:
            config["Entrypoint"] = list(self.entrypoint)
        if self.cmd is not None:
            config["Cmd"] = list(self.cmd)
        if self.user:
            config["User"] = self.user
        if self.workdir:
            config["WorkingDir"] = self.workdir
        if self.stop_signal:
            config["StopSignal"] = self.stop_signal
        return config


@dataclasses.dataclass(frozen=True)
class Written:
    """What :func:`write` produced: the digest a runtime shows for the image, and the layer's."""

    manifest_digest: str
    layer_digest: str
    layer_size: int


def tag_of(reference: str) -> str:
    """The tag of an image reference (``latest`` when it has none); a digest is not a tag."""
    last = reference.rsplit("/", 1)[-1]
    if "@" in last:
        raise ValueError(f"image reference {reference!r} pins a digest; give a name with a tag")
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def _walk(rootfs: pathlib.Path) -> list[str]:
    """Every path under ``rootfs``, relative, sorted by component (so parents come first)."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(rootfs):
        relative_dir = os.path.relpath(dirpath, rootfs)
        if relative_dir != ".":
            paths.append(relative_dir)
        # os.walk lists a symlink to a directory among the directories but does not descend it
        links = [name for name in dirnames if os.path.islink(os.path.join(dirpath, name))]
        for name in [*filenames, *links]:
            paths.append(os.path.normpath(os.path.join(relative_dir, name)))
    return sorted(paths, key=lambda path: path.split(os.sep))


def write_layer(rootfs: pathlib.Path, out: pathlib.Path) -> None:
    """An uncompressed layer tar of ``rootfs``: sorted, mtime 0, numeric owners only."""
    if not rootfs.is_dir():
        raise ArchiveError(f"root filesystem {rootfs} is not a directory")
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for relative in _walk(rootfs):
            full = rootfs / relative
            info = tar.gettarinfo(str(full), arcname=relative)
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isreg():
                with open(full, "rb") as content:
                    tar.addfile(info, content)
            else:
                tar.addfile(info)


def _sha256_file(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as content:
        for chunk in iter(lambda: content.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _canonical(document: Mapping[str, object]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def index_annotations(reference: str) -> dict[str, str]:
    return {ANNOTATION_CONTAINERD_NAME: reference, ANNOTATION_REF_NAME: tag_of(reference)}


def write(
    rootfs: pathlib.Path,
    out: pathlib.Path,
    reference: str,
    config: ImageConfig,
    annotations: Mapping[str, str] | None = None,
) -> Written:
    """Write ``rootfs`` as the one layer of image ``reference`` into the archive ``out``.

    ``annotations`` go on the manifest (``org.opencontainers.image.*`` labels, for example).
    """
    out = out.absolute()
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as scratch:
        layer = pathlib.Path(scratch) / "layer.tar"
        write_layer(rootfs, layer)
        layer_digest = _sha256_file(layer)
        layer_size = layer.stat().st_size
        image_config = _canonical(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": EPOCH,
                "config": config.as_json(),
                "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
                "history": [{"created": EPOCH, "created_by": "sundial oci_archive"}],
            }
        )
        config_digest = hashlib.sha256(image_config).hexdigest()
        manifest_document: dict[str, object] = {
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {
                "mediaType": MEDIA_CONFIG,
                "digest": f"sha256:{config_digest}",
                "size": len(image_config),
            },
            "layers": [
                {"mediaType": MEDIA_LAYER, "digest": f"sha256:{layer_digest}", "size": layer_size}
            ],
        }
        if annotations:
            manifest_document["annotations"] = dict(annotations)
        manifest = _canonical(manifest_document)
        manifest_digest = hashlib.sha256(manifest).hexdigest()
        index = _canonical(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_INDEX,
                "manifests": [
                    {
                        "mediaType": MEDIA_MANIFEST,
                        "digest": f"sha256:{manifest_digest}",
                        "size": len(manifest),
                        "platform": {"architecture": "amd64", "os": "linux"},
                        "annotations": index_annotations(reference),
                    }
                ],
            }
        )
        partial = pathlib.Path(scratch) / "image.tar"
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, "oci-layout", _canonical({"imageLayoutVersion": "1.0.0"}))
            _add_bytes(tar, "index.json", index)
            _add_bytes(tar, f"blobs/sha256/{config_digest}", image_config)
            _add_bytes(tar, f"blobs/sha256/{manifest_digest}", manifest)
            layer_info = tar.gettarinfo(str(layer), arcname=f"blobs/sha256/{layer_digest}")
            layer_info.uid = layer_info.gid = 0
            layer_info.uname = layer_info.gname = ""
            layer_info.mtime = 0
            layer_info.mode = 0o644
            with open(layer, "rb") as content:
                tar.addfile(layer_info, content)
        os.replace(partial, out)
    return Written(f"sha256:{manifest_digest}", f"sha256:{layer_digest}", layer_size)


def name(archive: pathlib.Path, reference: str) -> None:
    """Name every image in ``archive`` ``reference`` with the annotations :func:`write` sets.

    buildah's ``oci-archive:`` sets only ``org.opencontainers.image.ref.name``; this makes its
    archives import under the same name as ours. Blobs are copied unchanged, so every digest
    stays; the archive is rewritten beside itself and renamed.
    """
    archive = archive.absolute()
    with tempfile.TemporaryDirectory(dir=archive.parent, prefix=f".{archive.name}.") as scratch:
        partial = pathlib.Path(scratch) / "image.tar"
        with (
            tarfile.open(archive) as source,
            tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as target,
        ):
            for member in source:
                if os.path.normpath(member.name) == "index.json":
                    extracted = source.extractfile(member)
                    if extracted is None:
                        raise ArchiveError(f"{archive}: index.json cannot be read")
                    index = json.loads(extracted.read())
                    for descriptor in index.get("manifests") or []:
                        descriptor["annotations"] = {
                            **(descriptor.get("annotations") or {}),
                            **index_annotations(reference),
                        }
                    _add_bytes(target, "index.json", _canonical(index))
                elif member.isreg():
                    target.addfile(member, source.extractfile(member))
                else:
                    target.addfile(member)
        os.replace(partial, archive)


@dataclasses.dataclass(frozen=True)
class Verified:
    """An archive :func:`verify` accepted: its image names and the total size of its blobs."""

    references: tuple[str, ...]
    manifest_digests: tuple[str, ...]
    blob_bytes: int


def _json_blob(blobs: Mapping[str, bytes], descriptor: object, what: str) -> dict[str, object]:
    if not isinstance(descriptor, dict):
        raise ArchiveError(f"{what}: descriptor is not a JSON object")
    digest = descriptor.get("digest")
    if not isinstance(digest, str) or digest not in blobs:
        raise ArchiveError(f"{what}: blob {digest} is missing from blobs/")
    data = blobs[digest]
    if descriptor.get("size") != len(data):
        raise ArchiveError(f"{what}: descriptor size {descriptor.get('size')} != blob {len(data)}")
    document = json.loads(data)
    if not isinstance(document, dict):
        raise ArchiveError(f"{what}: blob {digest} is not a JSON object")
    return document


def verify(archive: pathlib.Path) -> Verified:
    """Check an OCI archive against the image layout spec, as far as a runtime relies on it.

    Every blob's name is the sha256 of its bytes; ``oci-layout`` and ``index.json`` are present;
    each manifest, config and layer named by a descriptor exists with that size and media type;
    a config's ``diff_ids`` match its layers (uncompressed). Works on archives from
    :func:`write` and from buildah alike. Raises :class:`ArchiveError` naming what is wrong.
    """
    small: dict[str, bytes] = {}
    blob_sizes: dict[str, int] = {}
    diff_ids: dict[str, str] = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            name = os.path.normpath(member.name)
            if not member.isreg():
                continue
            extracted = tar.extractfile(member)
            if extracted is None:
                raise ArchiveError(f"{archive}: {name} cannot be read")
            if name in ("oci-layout", "index.json"):
                small[name] = extracted.read()
                continue
            if not name.startswith("blobs/sha256/"):
                continue
            named = name.removeprefix("blobs/sha256/")
            if member.size <= _CHUNK:
                head = extracted.read()
                actual = hashlib.sha256(head).hexdigest()
                small[f"sha256:{named}"] = head
            else:
                actual = _sha256_stream(extracted)
            if actual != named:
                raise ArchiveError(f"{archive}: blob {named} has sha256 {actual}")
            blob_sizes[f"sha256:{named}"] = member.size
            diff_ids[f"sha256:{named}"] = _diff_id(tar, member, f"sha256:{named}")
    for required in ("oci-layout", "index.json"):
        if required not in small:
            raise ArchiveError(f"{archive}: no {required}")
    if json.loads(small["oci-layout"]).get("imageLayoutVersion") != "1.0.0":
        raise ArchiveError(f"{archive}: oci-layout is not imageLayoutVersion 1.0.0")
    index = json.loads(small["index.json"])
    manifests = index.get("manifests")
    if index.get("schemaVersion") != 2 or not isinstance(manifests, list) or not manifests:
        raise ArchiveError(f"{archive}: index.json lists no manifests")
    references = []
    digests = []
    for descriptor in manifests:
        annotations = descriptor.get("annotations") or {}
        reference = annotations.get(ANNOTATION_CONTAINERD_NAME) or annotations.get(
            ANNOTATION_REF_NAME
        )
        if not reference:
            raise ArchiveError(f"{archive}: a manifest in index.json has no image name annotation")
        manifest = _json_blob(small, descriptor, f"{archive}: manifest of {reference}")
        if manifest.get("mediaType", MEDIA_MANIFEST) != MEDIA_MANIFEST:
            raise ArchiveError(f"{archive}: {reference} is not an OCI image manifest")
        config = _json_blob(small, manifest.get("config"), f"{archive}: config of {reference}")
        layers = manifest.get("layers")
        if not isinstance(layers, list) or not layers:
            raise ArchiveError(f"{archive}: {reference} has no layers")
        layer_diff_ids = []
        for layer in layers:
            digest = layer.get("digest")
            if blob_sizes.get(digest) != layer.get("size"):
                raise ArchiveError(f"{archive}: layer {digest} of {reference} missing or resized")
            if layer.get("mediaType") not in (MEDIA_LAYER, MEDIA_LAYER_GZIP):
                raise ArchiveError(f"{archive}: layer {digest} has media type {layer['mediaType']}")
            layer_diff_ids.append(diff_ids[digest])
        rootfs = config.get("rootfs")
        if not isinstance(rootfs, dict) or rootfs.get("diff_ids") != layer_diff_ids:
            raise ArchiveError(f"{archive}: config diff_ids of {reference} do not match its layers")
        references.append(str(reference))
        digests.append(str(descriptor["digest"]))
    return Verified(tuple(references), tuple(digests), sum(blob_sizes.values()))


def _diff_id(tar: tarfile.TarFile, member: tarfile.TarInfo, digest: str) -> str:
    """The sha256 of a blob's uncompressed bytes (a gzip layer's diff_id differs from its name)."""
    extracted = tar.extractfile(member)
    if extracted is None or extracted.read(2) != b"\x1f\x8b":
        return digest
    extracted.seek(0)
    with gzip.GzipFile(fileobj=extracted) as unpacked:
        return f"sha256:{_sha256_stream(unpacked)}"


def _sha256_stream(stream: typing.IO[bytes] | gzip.GzipFile) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Write a root filesystem directory as a one-layer OCI image archive,"
        " or check an archive (--verify)."
    )
    parser.add_argument("rootfs", nargs="?", type=pathlib.Path, help="the directory to pack")
    parser.add_argument("out", type=pathlib.Path, help="the archive to write (or to check)")
    parser.add_argument("--name", help="the image reference, e.g. localhost/sundial/pause:1a2b")
    parser.add_argument("--entrypoint", type=json.loads, help='JSON list, e.g. ["/pause"]')
    parser.add_argument("--cmd", type=json.loads, help='JSON list, e.g. ["sh"]')
    parser.add_argument("--env", action="append", default=[], help="K=V, repeatable")
    parser.add_argument("--user", default="", help="numeric UID:GID the image runs as")
    parser.add_argument("--workdir", default="")
    parser.add_argument("--stop-signal", default="", help="e.g. SIGINT (default: SIGTERM)")
    parser.add_argument("--annotation", action="append", default=[], help="K=V on the manifest")
    parser.add_argument("--verify", action="store_true", help="check OUT instead of writing it")
    parser.add_argument(
        "--rename", action="store_true", help="set the image name (--name) of the archive OUT"
    )
    arguments = parser.parse_args(argv)
    if arguments.rename and not arguments.name:
        parser.error("--rename needs OUT and --name")
    if not (arguments.verify or arguments.rename) and (
        arguments.rootfs is None or not arguments.name
    ):
        parser.error("writing an archive needs ROOTFS, OUT and --name")
    for flag in ("entrypoint", "cmd"):
        value = getattr(arguments, flag)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(part, str) for part in value)
        ):
            parser.error(f"--{flag} must be a JSON list of strings, got {value!r}")
    for pair in [*arguments.env, *arguments.annotation]:
        if "=" not in pair:
            parser.error(f"{pair!r} is not K=V")
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parse_arguments(argv)
    if arguments.verify:
        checked = verify(arguments.out)
        print(f"{arguments.out}: {' '.join(checked.references)} {checked.blob_bytes} bytes, valid")
        return 0
    if arguments.rename:
        name(arguments.out, arguments.name)
        return 0
    written = write(
        arguments.rootfs,
        arguments.out,
        arguments.name,
        ImageConfig(
            entrypoint=arguments.entrypoint,
            cmd=arguments.cmd,
            env=arguments.env,
            user=arguments.user,
            workdir=arguments.workdir,
            stop_signal=arguments.stop_signal,
        ),
        dict(pair.split("=", 1) for pair in arguments.annotation),
    )
    print(f"{arguments.out}: {arguments.name} {written.manifest_digest} {written.layer_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
