"""An emulated jackpot sign on a pseudo-terminal: answers the line protocol and records what it shows.

Tests read ``current`` (the text on the sign now) and ``history`` (every text shown, in order). ``mute`` makes
the sign stop answering (a lost sign, as far as the controller can tell); ``corrupt_replies`` sends replies
with a wrong checksum (line noise).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tty
from collections.abc import Callable
from pathlib import Path

from drivers.display.protocol import Frame, ProtocolError, check_command, decode, encode, render

log = logging.getLogger(__name__)


class DisplayEmulator:
    def __init__(
        self, link: str | os.PathLike[str] | None = None, on_show: Callable[[str], None] | None = None
    ):
        self.link = Path(link) if link is not None else None
        self.on_show = on_show
        self.current = ""
        self.history: list[str] = []
        self.received: list[Frame] = []
        self.bad_lines = 0
        self.pings = 0
        self.mute = False
        self.corrupt_replies = False
        self._master: int | None = None
        self._slave: int | None = None
        self._buf = b""
        self._changed = asyncio.Event()
        self.path = ""

    async def start(self) -> str:
        """Open the pty and start answering; returns the path a driver opens."""
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line discipline: bytes pass as they are
        os.set_blocking(self._master, False)
        self.path = os.ttyname(self._slave)
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()
            self.link.symlink_to(self.path)
        asyncio.get_running_loop().add_reader(self._master, self._on_readable)
        return str(self.link) if self.link is not None else self.path

    async def stop(self) -> None:
        if self._master is not None:
            asyncio.get_running_loop().remove_reader(self._master)
            os.close(self._master)
        if self._slave is not None:
            os.close(self._slave)
        self._master = self._slave = None
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()

    async def wait_for(self, predicate: Callable[[DisplayEmulator], bool], timeout: float = 5.0) -> None:
        """Wait until ``predicate(self)`` holds (tests: no sleeps, no timing assertions)."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self._changed.clear()
                await self._changed.wait()

    def _on_readable(self) -> None:
        assert self._master is not None
        try:
            data = os.read(self._master, 4096)
        except BlockingIOError:
            return
        except OSError:  # EIO: nobody has the slave open right now
            return
        self._buf += data
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self._handle(line + b"\n")
        if len(self._buf) > 256:  # garbage without a newline
            self._buf = b""
            self.bad_lines += 1
        self._changed.set()

    def _handle(self, line: bytes) -> None:
        if self.mute:
            return
        try:
            frame = decode(line)
            check_command(frame)
        except ProtocolError as exc:
            self.bad_lines += 1
            if exc.seq is not None:
                self._reply(encode(exc.seq, "NAK", exc.code))
            return
        self.received.append(frame)
        text = render(frame)
        if frame.cmd == "PNG":
            self.pings += 1
        if text is not None and not self._is_repeat(frame):
            self.current = text
            self.history.append(text)
            log.info("display shows: %r", text)
            if self.on_show is not None:
                self.on_show(text)
        self._reply(encode(frame.seq, "ACK"))

    def _is_repeat(self, frame: Frame) -> bool:
        """A retransmission (same seq and command as the last one) is acked again but shown once."""
        return len(self.received) >= 2 and self.received[-2] == frame

    def _reply(self, line: bytes) -> None:
        if self.corrupt_replies:
            star = line.index(b"*")
            wrong = int(line[star + 1 : star + 3], 16) ^ 0xFF
            line = line[: star + 1] + f"{wrong:02X}".encode() + b"\r\n"
        with contextlib.suppress(OSError):  # buffer full or no reader: the sign just does not answer
            assert self._master is not None
            os.write(self._master, line)
