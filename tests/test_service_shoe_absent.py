"""A table started without its shoe (issue 42): the real service process (`tablectl run`), a real broker, and
the emulated shoe on a pty that appears only after the start, at the configured path (as udev's
/dev/tablectl-shoe appears when the shoe is plugged in). The service sends READY=1 once the journal and the
broker are up (a real sd_notify socket), says the shoe is absent in STATUS, in `tablectl status` and with a
`link_down` alert (key shoe_absent) while the lid stays locked, then takes the shoe when its device appears: the
link is up, the alert closes itself (acknowledged by tablectl) and a session opens. About 10 s."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.client import TableClient
from tablebench.demo_session import prepare_session
from tablebench.gpio_server import call as gpio_call
from tablebench.procs import stop_process
from tablebench.stack import ROOT, TABLECTL, Stack, StackOptions

WAIT = 30.0


def tablectl_status(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TABLECTL, "status", "--config", str(config)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


class Notifications:
    """The service's sd_notify datagrams on a real unix socket (what systemd reads)."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)
        self.received: list[str] = []

    async def until(self, condition: Callable[[list[str]], bool], what: str, log: Callable[[], str]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not condition(self.received):
            if loop.time() > deadline:
                raise AssertionError(f"{what}: {self.received[-10:]}\n{log()}")
            try:
                self.received.extend(self.sock.recv(4096).decode().splitlines())
            except BlockingIOError:
                await asyncio.sleep(0.05)  # the poll interval of a condition wait


def shoe_absent_alerts(client: TableClient) -> list[dict[str, Any]]:
    return [
        a
        for a in client.view.alerts_open
        if a.get("kind") == "link_down" and (a.get("details") or {}).get("key") == "shoe_absent"
    ]


async def test_a_table_started_without_its_shoe_runs_says_so_and_takes_the_shoe_when_it_appears(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = Notifications(tmp_path / "notify.sock")
    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False))
    client: TableClient | None = None
    try:
        stack.start_broker()
        stack.start_parts()  # the configuration names the shoe's path; then the shoe goes away (unplugged)
        stop_process(stack.shoe_proc)
        Path(stack.shoe_device).unlink(missing_ok=True)  # its symlink: a reused pty number is not the shoe
        monkeypatch.setenv(
            "NOTIFY_SOCKET", str(tmp_path / "notify.sock")
        )  # the service's only (mosquitto's too)
        stack.start_controller()

        # READY=1 without the shoe, STATUS saying why
        await notes.until(lambda r: "READY=1" in r, "no READY=1 without the shoe", stack.controller_log)
        status_line = notes.received[notes.received.index("READY=1") + 1]
        assert "not plugged in" in status_line and "lid locked" in status_line, status_line
        human = tablectl_status(stack.config_path)
        assert human.returncode == 0, human.stderr
        assert "shoe:    DOWN: not plugged in: serial port" in human.stdout, human.stdout

        client = stack.client("supervisor1")
        await client.connect()
        await client.wait_for(lambda v: v.status == "online" and {"shoe", "lid"} <= set(v.states), WAIT)
        await client.wait_for(lambda v: bool(shoe_absent_alerts(client)), WAIT)
        [alert] = shoe_absent_alerts(client)
        assert alert["severity"] == "warning" and "not plugged in" in alert["reason"]  # a closed table
        assert client.view.states["shoe"]["linked"] is False
        assert client.view.states["lid"]["locked"] is True  # PT-2001 r.60: locked while the shoe is away
        assert (await gpio_call(stack.gpio_socket, "read", name="lid_lock"))["value"] is True

        # the shoe is plugged in: its device appears at the configured path, and the table takes it
        stack._start_shoe()
        await client.wait_for(lambda v: v.states.get("shoe", {}).get("linked") is True, WAIT)
        await client.wait_for(lambda v: not shoe_absent_alerts(client), WAIT)  # closed by itself
        await notes.until(
            lambda r: any(m.startswith("STATUS=") and "shoe, journal and broker up" in m for m in r),
            "STATUS after the shoe appeared",
            stack.controller_log,
        )
        assert "shoe:    up" in tablectl_status(stack.config_path).stdout
        await prepare_session(
            stack, "pt-2001", lambda line: None
        )  # the table works: a session opens and bets
        await client.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)
    finally:
        if client is not None:
            await client.close()
        stack.stop()
        notes.sock.close()
