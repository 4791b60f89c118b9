"""The PostgreSQL image serves Sundial: its entrypoint, run as the image says, in a chroot.

No container runtime is needed: the image's one layer is unpacked, and its entrypoint runs with
the image's own environment and user in a chroot inside a private mount namespace (so the
/dev and /proc mounts it needs go when the test's processes do). The image is built with
`hack/images/build postgres` into the machine's image cache, which the real-node tier shares:
cold, that is a debootstrap of a minute or two; warm, a fraction of a second.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg
import pytest

from sundial.localdev import oci_archive
from sundial.store import migrate

ROOT = pathlib.Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Image:
    rootfs: pathlib.Path
    entrypoint: list[str]
    env: list[str]
    user: str


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("running the image's entrypoint in a chroot needs root and unshare")
    built = subprocess.run(
        [str(ROOT / "hack" / "images" / "build"), "postgres"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if built.returncode == 2 and "missing tools" in built.stderr:
        pytest.skip(built.stderr.strip())
    assert built.returncode == 0, built.stderr
    env_file = pathlib.Path(built.stdout.strip().splitlines()[-1])
    images = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    archive = pathlib.Path(images["SUNDIAL_IMAGE_POSTGRES_ARCHIVE"])
    checked = oci_archive.verify(archive)
    rootfs = tmp_path_factory.mktemp("postgres") / "rootfs"
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> tarfile.ExFileObject:
            extracted = tar.extractfile("blobs/sha256/" + digest.removeprefix("sha256:"))
            assert extracted is not None
            return extracted

        manifest = json.load(blob(checked.manifest_digests[0]))
        config = json.load(blob(manifest["config"]["digest"]))["config"]
        with tarfile.open(fileobj=blob(manifest["layers"][0]["digest"])) as layer:
            layer.extractall(rootfs, numeric_owner=True, filter="fully_trusted")
    return Image(rootfs, config["Entrypoint"], config["Env"], config["User"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int

    def output(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.read()

    def stop(self, signum: int = signal.SIGINT) -> int:
        """Send the image's stop signal to postgres (the chroot's exec'd entrypoint)."""
        os.killpg(self.process.pid, signum)
        return self.process.wait(timeout=30)


@pytest.fixture
def start(image: Image) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def run(**env: str) -> Server:
        port = free_port()
        mounts = f"mount --rbind /dev {image.rootfs}/dev && mount -t proc proc {image.rootfs}/proc"
        command = [
            "unshare",
            "--mount",
            "--fork",
            "--",
            "sh",
            "-c",
            f'{mounts} && exec chroot --userspec={image.user} {image.rootfs} "$@"',
            "sh",
            "env",
            "-i",
            *image.env,
            *(f"{name}={value}" for name, value in env.items()),
            *image.entrypoint,
            "-p",
            str(port),
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        server = Server(process, port)
        started.append(server)
        return server

    yield run
    for server in started:
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()
        if server.process.stdout is not None:
            server.process.stdout.close()


def connect(
    server: Server, password: str, *, timeout: float = 60
) -> psycopg.Connection[tuple[object, ...]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return psycopg.connect(
                host="127.0.0.1",
                port=server.port,
                user="sundial",
                dbname="sundial",
                password=password,
                connect_timeout=2,
                autocommit=True,
            )
        except psycopg.OperationalError as error:
            if server.process.poll() is not None:
                raise AssertionError(f"postgres exited: {server.output()}") from error
            if "password authentication failed" in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


TABLES = (
    "SELECT schemaname, tablename FROM pg_tables"
    " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
)


def test_it_initialises_from_the_environment_serves_sundial_and_stops_on_its_signal(
    start: Callable[..., Server], image: Image
) -> None:
    server = start(POSTGRES_USER="sundial", POSTGRES_PASSWORD="s3cret")
    with connect(server, "s3cret") as conn:
        row = conn.execute(
            "SELECT current_user, pg_catalog.pg_get_userbyid(datdba) FROM pg_database"
            " WHERE datname = 'sundial'"
        ).fetchone()
        assert row == ("sundial", "sundial")
    dsn = f"postgresql://sundial:s3cret@127.0.0.1:{server.port}/sundial"
    migrate.migrate(dsn)
    with connect(server, "s3cret") as conn:
        tables = conn.execute(TABLES).fetchall()
    assert len(tables) > 5
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(server, "wrong")
    assert server.stop() == 0
    data = image.rootfs / "var/lib/postgresql/data/pgdata"
    assert data.stat().st_uid == 999 and (data.stat().st_mode & 0o777) == 0o700

    # a second start finds its data: no password needed to start, nothing re-initialised
    again = start()
    with connect(again, "s3cret") as conn:
        assert conn.execute(TABLES).fetchall() == tables
    assert again.stop() == 0


def test_it_refuses_to_start_without_a_password_or_an_explicit_trust(
    start: Callable[..., Server], image: Image
) -> None:
    shutil.rmtree(image.rootfs / "var/lib/postgresql/data/pgdata", ignore_errors=True)
    server = start()
    assert server.process.wait(timeout=30) == 2
    output = server.output()
    assert "set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust" in output
    assert not (image.rootfs / "var/lib/postgresql/data/pgdata").exists()
