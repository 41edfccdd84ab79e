"""`tablectl demo` with the pit terminal: its connection to the demo's stack, the demo keys on the emulated shoe
and fake GPIO board, and the line that attaches the floor alert console (docs/terminal.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from controller.paste import command
from tablebench.stack import Stack

FLOOR_ACCOUNT = "supervisor2"  # the floor console's broker account in the demo (the pit uses supervisor1)


class StackHardware:
    """The pit terminal's demo keys (controller/terminal/pit_connection.py ``DemoHardware``) on a stack's emulated shoe
    (its control socket, docs/emulator.md) and fake GPIO board (tablebench/gpio_server.py)."""

    def __init__(self, shoe_control: str, gpio_control: str) -> None:
        self.shoe_control = shoe_control
        self.gpio_control = gpio_control
        self.chip_sensor = bool(gpio_control)
        self._ctl: Any = None

    async def connect(self) -> Any:
        from tablebench.emulator.control_client import ControlClient

        self._ctl = await ControlClient.connect(self.shoe_control)
        return self._ctl

    async def close(self) -> None:
        if self._ctl is not None:
            await self._ctl.close()

    async def sense_chip(self, seat: int) -> None:
        from tablebench import gpio_server

        for present in (False, True):  # the slot empties first: the dealer took the last chip
            reply = await gpio_server.call(self.gpio_control, "set", name=f"chip_slot_{seat}", value=present)
            if not reply.get("ok"):
                raise RuntimeError(str(reply.get("error")))

    async def damaged_card(self) -> str | None:
        """The last card out of the emulated shoe that it sent as unreadable: a card that came out, never one
        inside (docs/emulator.md ``dealt``)."""
        if self._ctl is None:
            return None
        dealt = await self._ctl.dealt()
        return next((str(d["code"]) for d in reversed(dealt) if d.get("unreadable")), None)


def terminal_connection(stack: Stack, profile: str) -> Any:
    from controller.terminal.pit_connection import PitConnection

    return PitConnection(
        host=stack.host,
        port=stack.port,
        user="dealer",
        password=stack.users["dealer"],
        prefix=stack.prefix,
        supervisor_account="supervisor1",
        supervisor_password=stack.users["supervisor1"],
        demo=StackHardware(stack.shoe_control, stack.gpio_socket),
        floor_console=f"sh {floor_console_script(stack)}",
        profile=profile,
        key_dir=str(stack.key_dir),
    )


def floor_console_line(stack: Stack) -> str:
    """The one line that attaches the floor alert console to the demo's broker (docs/terminal.md): the console's
    client configuration file (controller/mqtt/client_options.py) and its password file (0600) in the demo's
    workdir, and tablectl by its absolute path, so that the line works pasted into a fresh shell."""
    password = stack.workdir / "floor-console-password"
    fd = os.open(password, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(stack.users[FLOOR_ACCOUNT] + "\n")
    settings = stack.workdir / "floor-console.toml"
    settings.write_text(
        "# The demo's floor alert console: `tablectl alerts --client-config` (docs/terminal.md)\n"
        f"host = {json.dumps(stack.host)}\nport = {stack.port}\nusername = {json.dumps(FLOOR_ACCOUNT)}\n"
        f"password_file = {json.dumps(password.name)}\nsite = {json.dumps(stack.opts.site)}\n"
    )
    return command("alerts", "--client-config", settings, "--key-dir", stack.key_dir)


def floor_console_script(stack: Stack) -> Path:
    """That line as a script in the demo's work directory, so the pit terminal names it in one short line even
    at 80 columns (``sh <workdir>/floor-console``): the line itself is longer than the screen is wide."""
    script = stack.workdir / "floor-console"
    fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(
            f"#!/bin/sh\n# the demo's floor alert console (docs/terminal.md)\nexec {floor_console_line(stack)}\n"
        )
    script.chmod(0o700)
    return script
