"""A throwaway Redis server started from the machine's own ``redis-server``.

The hot queue's tests need a real Redis, as the store's need a real PostgreSQL, and no Docker
engine exists here, so this module runs ``redis-server`` in a temporary directory on a free
port of 127.0.0.1, with no password (nothing but the tests reach it) and the persistence a test
asks for: none, or an append-only file written on every command (``appendfsync always``), so
that a server killed with SIGKILL comes back with every write it acknowledged. The faults the
hot queue must survive are the reason for the rest: ``kill`` (SIGKILL, no shutdown),
``restart`` (the same port and directory), and ``replica_of`` / ``promote`` (a replica taken
over, as Sentinel does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from sundial import errors as sundial_errors

__all__ = [
    "RedisNotFoundError",
    "RedisReplyError",
    "ThrowawayRedis",
    "command",
    "find_redis_server",
    "throwaway_redis",
]

#: How long a server may take to answer its first PING.
START_SECONDS = 10.0


class RedisNotFoundError(sundial_errors.SundialError, RuntimeError):
    """``redis-server`` is not on this machine."""


class RedisReplyError(sundial_errors.SundialError, RuntimeError):
    """The server answered a command with an error reply (``-ERR ...``, ``-READONLY ...``)."""


def find_redis_server() -> Path:
    """``SUNDIAL_REDIS_SERVER`` when set, else ``redis-server`` on the PATH."""
    explicit = os.environ.get("SUNDIAL_REDIS_SERVER")
    if explicit:
        return Path(explicit)
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise RedisNotFoundError(
        "redis-server not found: install it (Debian: `apt-get install -y redis-server`, or run "
        "hack/ensure-redis as root), or set SUNDIAL_REDIS_SERVER to its path"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(port: int, *args: str, timeout: float = 2.0) -> str | int | None:
    """Send one command in RESP and return its reply, without a client library: the server's
    own readiness, role and fault steps, before any client is set up. A simple string or a
    bulk string comes back as ``str`` (``None`` for a nil), an integer as ``int``; an error
    reply raises ``RedisReplyError``. Arrays are not read (no caller needs one)."""
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(b"".join(parts))
        with sock.makefile("rb") as reader:
            return _reply(reader, args[0] if args else "")


def _reply(reader: BinaryIO, name: str) -> str | int | None:
    """One RESP reply from ``reader``: see ``command``."""
    line = reader.readline().rstrip(b"\r\n").decode()
    kind, rest = line[:1], line[1:]
    if kind == "+":
        return rest
    if kind == ":":
        return int(rest)
    if kind == "-":
        raise RedisReplyError(f"{name}: {rest}")
    if kind == "$":
        size = int(rest)
        if size < 0:
            return None
        return reader.read(size + 2)[:size].decode()
    raise RedisReplyError(f"{name}: a reply this helper does not read: {line}")


class ThrowawayRedis:
    """One Redis server in a temporary directory, removed on :meth:`stop`.

    ``persistence``: ``"none"`` (nothing survives a restart) or ``"aof"`` (every acknowledged
    write survives SIGKILL: the append-only file is flushed on each command)."""

    def __init__(self, *, persistence: str = "none") -> None:
        if persistence not in ("none", "aof"):
            raise ValueError(f"persistence is 'none' or 'aof', not {persistence!r}")
        self.binary = find_redis_server()
        self.persistence = persistence
        self.port = _free_port()
        self.base_dir = Path(tempfile.mkdtemp(prefix="sundial-redis-"))
        self.log_file = self.base_dir / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _arguments(self) -> list[str]:
        arguments = [
            str(self.binary),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.base_dir),
            "--logfile", str(self.log_file),
            "--daemonize", "no",
            "--save", "",
            "--protected-mode", "no",
        ]  # fmt: skip
        if self.persistence == "aof":
            arguments += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            arguments += ["--appendonly", "no"]
        return arguments

    def start(self) -> ThrowawayRedis:
        """Start the server (again, after :meth:`kill`, on the same port and directory) and
        wait until it answers PING."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"redis-server on port {self.port} is already running")
        self.process = subprocess.Popen(
            self._arguments(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C of the tests is not delivered to it first
        )
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                stderr = self.process.stderr.read().decode() if self.process.stderr else ""
                log = self.log_file.read_text() if self.log_file.exists() else ""
                raise RuntimeError(
                    f"redis-server exited with code {self.process.returncode} at start:\n"
                    f"{stderr}\n{log[-4000:]}"
                )
            with contextlib.suppress(OSError, RedisReplyError):
                # -LOADING while it reads its append-only file; PONG once it serves.
                if command(self.port, "PING") == "PONG":
                    return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"redis-server on port {self.port} did not answer PING in {START_SECONDS} s"
                )
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final save; what was not on disk is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()

    def restart(self) -> ThrowawayRedis:
        """Killed and started again on the same port and directory."""
        self.kill()
        return self.start()

    def replica_of(self, primary: ThrowawayRedis) -> None:
        """Follow ``primary`` (asynchronous replication, as a Redis replica does)."""
        command(self.port, "REPLICAOF", "127.0.0.1", str(primary.port))

    def promote(self) -> None:
        """Stop following: this server now takes writes (a failover's promotion)."""
        command(self.port, "REPLICAOF", "NO", "ONE")

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()
        shutil.rmtree(self.base_dir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_redis(*, persistence: str = "none") -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(persistence=persistence).start()
    try:
        yield server
    finally:
        server.stop()
