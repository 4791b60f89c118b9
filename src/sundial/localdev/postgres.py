"""A throwaway PostgreSQL server started from the machine's own binaries.

The tests and the demo need a real PostgreSQL and no Docker engine exists here,
so this module runs ``initdb`` and ``pg_ctl`` in a temporary directory. PostgreSQL
refuses to run as root, and CI runs as root, so when we are root the server runs
as the unprivileged ``nobody`` user through ``runuser``.

The server listens on 127.0.0.1 only, trusts local connections and turns off
``fsync``: it holds nothing worth keeping, and the tests want real commits and
real row locks, not durability.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sundial import errors as sundial_errors
from sundial.store import server

__all__ = [
    "PostgresNotFoundError",
    "ThrowawayPostgres",
    "find_postgres_bin_dir",
    "throwaway_postgres",
]

_UNPRIVILEGED_USER = "nobody"


class PostgresNotFoundError(sundial_errors.SundialError, RuntimeError):
    """The PostgreSQL server binaries (initdb, pg_ctl) are not on this machine."""


def find_postgres_bin_dir() -> Path:
    """Return the directory holding ``initdb`` and ``pg_ctl``.

    ``SUNDIAL_PG_BIN`` wins; then the PATH; then Debian's versioned directories,
    newest first (Debian does not put initdb on the PATH).
    """
    explicit = os.environ.get("SUNDIAL_PG_BIN")
    if explicit:
        return Path(explicit)
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
        reverse=True,
    )
    if candidates:
        return Path(candidates[0]).parent
    raise PostgresNotFoundError(
        "PostgreSQL server binaries not found: install them (Debian: `apt-get install -y "
        "postgresql`), put initdb and pg_ctl on the PATH, or set SUNDIAL_PG_BIN to their "
        "directory. Alternatively point SUNDIAL_TEST_DSN at a server you already run."
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThrowawayPostgres:
    """One PostgreSQL cluster in a temporary directory, removed on :meth:`stop`."""

    def __init__(self, *, max_connections: int = 300, extra_settings: dict[str, str] | None = None):
        self.bin_dir = find_postgres_bin_dir()
        self.port = _free_port()
        self.max_connections = max_connections
        self.extra_settings = extra_settings or {}
        self.base_dir = Path(tempfile.mkdtemp(prefix="sundial-pg-"))
        self.data_dir = self.base_dir / "data"
        self.socket_dir = self.base_dir / "sock"
        self.log_file = self.base_dir / "postgres.log"
        self.user = "postgres"
        self._run_as: list[str] = []
        self._options = ""
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_UNPRIVILEGED_USER)
            for path in (self.base_dir,):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            self._run_as = ["runuser", "-u", _UNPRIVILEGED_USER, "--"]

    @property
    def dsn(self) -> str:
        """A libpq URL for the ``postgres`` database as the superuser."""
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [*self._run_as, *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.base_dir,
        )
        if result.returncode != 0:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            raise RuntimeError(
                f"{args[0]} failed with exit code {result.returncode}:\n"
                f"{result.stdout}\n{result.stderr}\n{log[-4000:]}"
            )

    def start(self) -> ThrowawayPostgres:
        if self._run_as:
            # The unprivileged user must be able to create its directories.
            os.chmod(self.base_dir, 0o755)
        self._run(
            str(self.bin_dir / "initdb"),
            "-D", str(self.data_dir),
            "-U", self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip
        return self._launch()

    def start_standby_of(self, primary: ThrowawayPostgres) -> ThrowawayPostgres:
        """Start as a streaming replica of ``primary``: a base backup that writes the standby's
        connection settings (``pg_basebackup -R``), then this server in recovery. initdb's
        ``pg_hba.conf`` already trusts replication connections from 127.0.0.1."""
        if self._run_as:
            os.chmod(self.base_dir, 0o755)
        self._run(
            str(self.bin_dir / "pg_basebackup"),
            "-D", str(self.data_dir),
            "-h", "127.0.0.1",
            "-p", str(primary.port),
            "-U", primary.user,
            "-X", "stream",
            "-R",
            "--no-sync",
            "--checkpoint=fast",  # a spread checkpoint would take minutes of an idle server
        )  # fmt: skip
        return self._launch()

    def promote(self) -> None:
        """End recovery on a standby: it takes writes from now on (what Patroni or
        CloudNativePG do to a replica when the primary is gone)."""
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-w", "promote")

    def kill(self) -> None:
        """SIGKILL the postmaster and every process it started, as a node that dies would:
        no shutdown checkpoint, no goodbye to the clients or the standby."""
        pid_file = self.data_dir / "postmaster.pid"
        postmaster = int(pid_file.read_text().splitlines()[0])
        children = subprocess.run(
            ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
        ).stdout.split()
        for pid in [postmaster, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _launch(self) -> ThrowawayPostgres:
        Path(self.socket_dir).mkdir()
        if self._run_as:
            entry = pwd.getpwnam(_UNPRIVILEGED_USER)
            os.chown(self.socket_dir, entry.pw_uid, entry.pw_gid)
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "max_connections": str(self.max_connections),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "256MB",
            **server.RECOMMENDED,  # as a real installation should (sundial.store.server)
            **self.extra_settings,
        }
        options = " ".join(f"-c {key}={value}" for key, value in settings.items())
        self._options = options
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D", str(self.data_dir),
            "-l", str(self.log_file),
            "-o", options,
            "-w", "-t", "60",
            "start",
        )  # fmt: skip
        return self

    def restart(self, *, mode: str = "fast") -> None:
        """Stop and start the server in place (used by reconnect tests)."""
        pg_ctl = str(self.bin_dir / "pg_ctl")
        self._run(pg_ctl, "-D", str(self.data_dir), "-m", mode, "-w", "stop")
        # The same -o options as at start: the port and socket directory live there.
        self._run(
            pg_ctl, "-D", str(self.data_dir), "-l", str(self.log_file), "-o", self._options,
            "-w", "start",
        )  # fmt: skip

    def stop(self) -> None:
        if self.data_dir.exists():
            with contextlib.suppress(RuntimeError):
                pg_ctl = str(self.bin_dir / "pg_ctl")
                self._run(pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base_dir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_postgres(**kwargs: object) -> Iterator[ThrowawayPostgres]:
    """Start a server for the duration of a ``with`` block."""
    server = ThrowawayPostgres(**kwargs)  # type: ignore[arg-type]
    try:
        yield server.start()
    finally:
        server.stop()
