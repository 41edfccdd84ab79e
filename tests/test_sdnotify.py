"""sd_notify over a real AF_UNIX datagram socket, filesystem and abstract, as systemd sets $NOTIFY_SOCKET."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller import sdnotify


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket on a short path (sun_path is ~108 bytes; pytest's tmp_path can be longer)."""
    folder = tempfile.mkdtemp(prefix="sdn-", dir="/tmp")
    path = os.path.join(folder, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    try:
        yield sock, path
    finally:
        sock.close()
        os.unlink(path)
        os.rmdir(folder)


def recv(sock: socket.socket) -> str:
    return sock.recv(4096).decode()


def test_ready_with_status(listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert sdnotify.ready("serial link, journal and broker up") is True
    assert recv(sock) == "READY=1\nSTATUS=serial link, journal and broker up"


def test_status_watchdog_stopping(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    env = {"NOTIFY_SOCKET": path}
    assert sdnotify.status("shoe link down\nretrying", env=env)
    assert recv(sock) == "STATUS=shoe link down retrying"  # one line: a newline would start a new field
    assert sdnotify.watchdog(env=env)
    assert recv(sock) == "WATCHDOG=1"
    assert sdnotify.stopping("outputs safe", env=env)
    assert recv(sock) == "STOPPING=1\nSTATUS=outputs safe"


def test_abstract_socket() -> None:
    name = f"tablectl-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert sdnotify.ready(env={"NOTIFY_SOCKET": "@" + name})
        assert recv(sock) == "READY=1"


def test_no_op_without_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sdnotify.ready() is False
    assert sdnotify.watchdog(env={}) is False


def test_unusable_socket_is_reported_not_raised(tmp_path: Path) -> None:
    assert sdnotify.ready(env={"NOTIFY_SOCKET": str(tmp_path / "gone")}) is False
    assert sdnotify.ready(env={"NOTIFY_SOCKET": "relative/path"}) is False


def test_malformed_field_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="KEY=VALUE"):
        sdnotify.notify("READY", env={"NOTIFY_SOCKET": "/nonexistent"})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "10000000"}, 10.0),
        ({"WATCHDOG_USEC": "2500000", "WATCHDOG_PID": str(os.getpid())}, 2.5),
        ({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "1"}, None),  # meant for another process
        ({"WATCHDOG_USEC": "ten"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
    ],
)
def test_watchdog_interval(env: dict[str, str], expected: float | None) -> None:
    assert sdnotify.watchdog_interval(env) == expected


async def test_watchdog_loop_pings_only_while_healthy(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    sock.setblocking(False)
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000"}
    checks = 0

    def healthy() -> bool:
        nonlocal checks
        checks += 1
        return checks > 3  # unhealthy for the first three rounds: no ping may be sent then

    task = asyncio.create_task(sdnotify.watchdog_loop(healthy, env=env))
    try:
        data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(sock, 64), 10)
    finally:
        task.cancel()
    assert data == b"WATCHDOG=1"
    assert checks >= 4


async def test_watchdog_loop_returns_without_a_watchdog() -> None:
    await asyncio.wait_for(sdnotify.watchdog_loop(env={}), 5)
