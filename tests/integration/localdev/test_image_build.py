"""`hack/images/build pause busybox`: real archives, cached by content, usable by real tools.

The small images only: pause (our pause.c, gcc -static) and busybox (Debian's static busybox)
build in about a second. The Python, runner, operator and PostgreSQL images take minutes and
are built by the real-node tier's setup, not here. Each test module gets its own cache
(SUNDIAL_IMAGE_CACHE), so nothing here reads or changes the machine's image cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from sundial.localdev import oci_archive

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUILD = ROOT / "hack" / "images" / "build"
KEY = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True)
class Run:
    returncode: int
    env_file: pathlib.Path
    stderr: str
    seconds: float


def build(cache: pathlib.Path, *names: str, script: pathlib.Path = BUILD) -> Run:
    started = time.monotonic()
    result = subprocess.run(
        [str(script), *names],
        env={**os.environ, "SUNDIAL_IMAGE_CACHE": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode == 2 and "missing tools" in result.stderr:
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    return Run(result.returncode, pathlib.Path(last), result.stderr, time.monotonic() - started)


def read_env(path: pathlib.Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("image-cache")


@pytest.fixture(scope="module")
def images(cache: pathlib.Path) -> dict[str, str]:
    return read_env(build(cache, "pause", "busybox").env_file)


def unpack(archive: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """The image's root filesystem (its one layer), as a runtime would lay it out."""
    checked = oci_archive.verify(archive)
    with tarfile.open(archive) as image:
        index = image.extractfile("index.json")
        assert index is not None
        manifest_digest = checked.manifest_digests[0].removeprefix("sha256:")
        manifest = image.extractfile(f"blobs/sha256/{manifest_digest}")
        assert manifest is not None
        [layer] = json.load(manifest)["layers"]
        blob = image.extractfile("blobs/sha256/" + layer["digest"].removeprefix("sha256:"))
        assert blob is not None
        with tarfile.open(fileobj=blob) as rootfs:
            rootfs.extractall(into, filter="fully_trusted")
    return into


def test_the_env_file_names_every_image_and_its_archive(images: dict[str, str]) -> None:
    assert set(images) == {
        "SUNDIAL_IMAGE_PAUSE",
        "SUNDIAL_IMAGE_PAUSE_ARCHIVE",
        "SUNDIAL_IMAGE_BUSYBOX",
        "SUNDIAL_IMAGE_BUSYBOX_ARCHIVE",
    }
    for name in ("pause", "busybox"):
        reference = images[f"SUNDIAL_IMAGE_{name.upper()}"]
        repository, tag = reference.rsplit(":", 1)
        assert repository == f"localhost/sundial/{name}" and KEY.fullmatch(tag)
        archive = pathlib.Path(images[f"SUNDIAL_IMAGE_{name.upper()}_ARCHIVE"])
        assert archive.is_absolute() and archive.name == f"{name}-{tag}.oci.tar"
        assert oci_archive.verify(archive).references == (reference,)


def test_a_warm_run_builds_nothing_and_takes_seconds(
    cache: pathlib.Path, images: dict[str, str]
) -> None:
    archives = [pathlib.Path(images[f"SUNDIAL_IMAGE_{n}_ARCHIVE"]) for n in ("PAUSE", "BUSYBOX")]
    before = [hashlib.sha256(path.read_bytes()).hexdigest() for path in archives]
    warm = build(cache, "pause", "busybox")
    assert read_env(warm.env_file) == images
    assert "building" not in warm.stderr
    assert warm.stderr.count(" cached: ") == 2
    assert warm.seconds < 10
    assert [hashlib.sha256(path.read_bytes()).hexdigest() for path in archives] == before


def test_changing_one_images_source_rebuilds_that_image_only(
    tmp_path: pathlib.Path, cache: pathlib.Path, images: dict[str, str]
) -> None:
    """The key is the content: a copy of the sources keys the same, an edited pause.c does not."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "hack" / "images", copy / "hack" / "images")
    writer = copy / "src" / "sundial" / "localdev"
    writer.mkdir(parents=True)
    shutil.copy(ROOT / "src" / "sundial" / "localdev" / "oci_archive.py", writer)
    script = copy / "hack" / "images" / "build"
    assert read_env(build(cache, "pause", "busybox", script=script).env_file) == images

    pause_c = copy / "hack" / "images" / "pause.c"
    pause_c.write_text(pause_c.read_text() + "/* an edit */\n")
    edited = build(cache, "pause", "busybox", script=script)
    after = read_env(edited.env_file)
    assert after["SUNDIAL_IMAGE_PAUSE"] != images["SUNDIAL_IMAGE_PAUSE"]
    assert after["SUNDIAL_IMAGE_BUSYBOX"] == images["SUNDIAL_IMAGE_BUSYBOX"]
    assert "pause building" in edited.stderr and "busybox cached" in edited.stderr
    assert edited.env_file != pathlib.Path(images["SUNDIAL_IMAGE_PAUSE_ARCHIVE"]).parent


def test_concurrent_callers_build_each_image_once(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "cache"
    environment = {**os.environ, "SUNDIAL_IMAGE_CACHE": str(cache)}
    callers = [
        subprocess.Popen(
            [str(BUILD), "pause", "busybox"],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [caller.communicate(timeout=300) for caller in callers]
    for caller, (_, stderr) in zip(callers, outputs, strict=True):
        if caller.returncode == 2 and "missing tools" in stderr:
            pytest.skip(stderr.strip())
        assert caller.returncode == 0, stderr
    stderr = "".join(err for _, err in outputs)
    assert stderr.count("pause building") == 1 and stderr.count("busybox building") == 1
    assert len({out.strip().splitlines()[-1] for out, _ in outputs}) == 1
    assert sorted(path.name.split("-")[0] for path in cache.glob("*.oci.tar")) == [
        "busybox",
        "pause",
    ]
    assert not list(cache.glob(".work-*"))  # no scratch tree left behind


@pytest.fixture
def pause_process(
    images: dict[str, str], tmp_path: pathlib.Path
) -> Iterator[subprocess.Popen[bytes]]:
    rootfs = unpack(pathlib.Path(images["SUNDIAL_IMAGE_PAUSE_ARCHIVE"]), tmp_path / "pause")
    assert sorted(os.listdir(rootfs)) == ["pause"]
    process = subprocess.Popen([str(rootfs / "pause")])
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def test_pause_sleeps_until_sigterm_and_then_exits_0(
    pause_process: subprocess.Popen[bytes],
) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        pause_process.wait(timeout=0.3)
    pause_process.send_signal(signal.SIGTERM)
    assert pause_process.wait(timeout=5) == 0


def test_busybox_has_its_applets_and_the_non_root_user(
    images: dict[str, str], tmp_path: pathlib.Path
) -> None:
    rootfs = unpack(pathlib.Path(images["SUNDIAL_IMAGE_BUSYBOX_ARCHIVE"]), tmp_path / "busybox")
    for applet in ("sh", "sleep", "ls", "id", "cat"):
        assert os.readlink(rootfs / "bin" / applet) == "busybox"
    passwd = (rootfs / "etc" / "passwd").read_text().splitlines()
    assert "nonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh" in passwd
    said = subprocess.run(
        [str(rootfs / "bin" / "sh"), "-c", "echo $((6 * 7))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert said.stdout == "42\n"
    if os.geteuid() == 0:
        # the image's own /etc/passwd names the user the Pods run as
        whoami = subprocess.run(
            ["chroot", "--userspec=65532:65532", str(rootfs), "/bin/id", "-un"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert whoami.stdout == "nonroot\n"


def test_buildah_reads_the_archives(images: dict[str, str], tmp_path: pathlib.Path) -> None:
    """A tool that is not ours accepts the layout, the name and the config."""
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (apt-get install buildah)")
    buildah = [
        "buildah",
        "--root",
        str(tmp_path / "storage"),
        "--runroot",
        str(tmp_path / "run"),
        "--storage-driver",
        "vfs",
    ]
    try:
        for name, entrypoint in (("PAUSE", ["/pause"]), ("BUSYBOX", None)):
            reference = images[f"SUNDIAL_IMAGE_{name}"]
            archive = images[f"SUNDIAL_IMAGE_{name}_ARCHIVE"]
            subprocess.run([*buildah, "pull", "-q", f"oci-archive:{archive}"], check=True)
            inspected = subprocess.run(
                [*buildah, "inspect", "--type", "image", reference],
                capture_output=True,
                text=True,
                check=True,
            )
            assert json.loads(inspected.stdout)["OCIv1"]["config"].get("Entrypoint") == entrypoint
        listed = subprocess.run(
            [*buildah, "images", "--format", "{{.Name}}:{{.Tag}}"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert sorted(listed.stdout.split()) == sorted(
            [images["SUNDIAL_IMAGE_BUSYBOX"], images["SUNDIAL_IMAGE_PAUSE"]]
        )
    finally:
        subprocess.run([*buildah, "rmi", "--all", "--force"], capture_output=True, check=False)
