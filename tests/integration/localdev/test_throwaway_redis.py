"""The test bed for the hot queue: a real Redis the tests start, kill, restart and fail over,
and which leaves nothing behind. What each fault keeps is Redis's own behaviour; these tests
pin it, since the hot queue's fault tests will lean on it."""

from __future__ import annotations

import os
import time

import pytest

from sundial.localdev import redis_server
from sundial.localdev.redis_server import RedisReplyError, command, throwaway_redis


def _until(check: object, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {within} s"
        time.sleep(0.02)


def test_a_server_answers_and_leaves_nothing_behind() -> None:
    with throwaway_redis() as server:
        assert command(server.port, "SET", "run:1", "due") == "OK"
        assert command(server.port, "GET", "run:1") == "due"
        assert command(server.port, "GET", "run:2") is None
        assert command(server.port, "INCR", "attempts") == 1
        with pytest.raises(RedisReplyError, match="wrong number of arguments"):
            command(server.port, "GET")
        process, directory = server.process, server.base_dir
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
    assert process is not None and process.poll() is not None, "the server still runs"
    assert not directory.exists(), "its directory was left behind"


@pytest.mark.parametrize(("persistence", "kept"), [("aof", "due"), ("none", None)])
def test_what_a_sigkill_keeps(persistence: str, kept: str | None) -> None:
    """With the append-only file flushed on every command, an acknowledged write survives
    SIGKILL; with no persistence the restarted server is empty."""
    with throwaway_redis(persistence=persistence) as server:
        command(server.port, "SET", "run:1", "due")
        server.restart()
        assert command(server.port, "GET", "run:1") == kept


def test_a_replica_promoted_takes_writes_and_has_what_was_replicated() -> None:
    with throwaway_redis() as primary, throwaway_redis() as replica:
        replica.replica_of(primary)
        command(primary.port, "SET", "run:1", "due")
        _until(lambda: command(replica.port, "GET", "run:1") == "due")
        with pytest.raises(RedisReplyError, match="READONLY"):
            command(replica.port, "SET", "run:2", "due")
        primary.kill()
        replica.promote()
        assert command(replica.port, "SET", "run:2", "due") == "OK"
        assert command(replica.port, "GET", "run:1") == "due"


def test_a_missing_binary_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUNDIAL_REDIS_SERVER", "")
    monkeypatch.setenv("PATH", os.devnull)
    with pytest.raises(redis_server.RedisNotFoundError, match="apt-get install -y redis-server"):
        redis_server.find_redis_server()
