"""Asyncio driver for the jackpot sign over a serial line (protocol in ``protocol.py``, docs/display.md).

One command in flight at a time; each waits ``ack_timeout`` seconds for its ACK and is re-sent up to
``retries`` times. A command that is never acked, or a lost port, sets ``connected`` False and calls
``on_connection(False)``; a periodic ping (every ``ping_interval`` seconds) notices the loss when the table is
idle and the return of the sign (reopening the port if it went away). The caller must then refuse jackpot
chips (``controller.jackpot.availability.playable``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import serial_asyncio_fast

from drivers.aio import cancel_tasks
from drivers.display.protocol import Frame, ProtocolError, decode, encode

log = logging.getLogger(__name__)


class DisplayError(Exception):
    """The sign refused a command as malformed (NAK BADCMD/BADARG): a controller bug, not a lost link."""


@dataclass
class DisplayStats:
    sent: int = 0
    retries: int = 0
    acked: int = 0
    naks: int = 0
    bad_lines: int = 0
    timeouts: int = 0
    reopened: int = 0


class DisplayDriver:
    def __init__(
        self,
        port: str,
        *,
        baudrate: int = 9600,
        ack_timeout: float = 0.5,
        retries: int = 2,
        ping_interval: float = 2.0,
        on_connection: Callable[[bool], None] | None = None,
    ) -> None:
        self.port = port
        self.baudrate = baudrate
        self.ack_timeout = ack_timeout
        self.retries = retries
        self.ping_interval = ping_interval
        self.on_connection = on_connection
        self.stats = DisplayStats()
        self._connected = False
        self._seq = 0
        self._lock = asyncio.Lock()
        self._waiting: dict[int, asyncio.Future[Frame]] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._ping_task: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self._connected

    # ---- life cycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the port (if possible now), ping the sign and keep pinging in the background."""
        await self._open()
        if self._writer is not None:
            await self.ping()
        self._ping_task = asyncio.create_task(self._ping_loop(), name="display-ping")

    async def stop(self) -> None:
        await cancel_tasks(task for task in (self._ping_task, self._read_task) if task is not None)
        self._ping_task = self._read_task = None
        self._close()

    async def _open(self) -> bool:
        try:
            self._reader, self._writer = await serial_asyncio_fast.open_serial_connection(
                url=self.port, baudrate=self.baudrate
            )
        except (OSError, ValueError) as exc:  # serial.SerialException is an OSError
            log.warning("jackpot display: cannot open %s: %s", self.port, exc)
            self._reader = self._writer = None
            self._set_connected(False)
            return False
        self._read_task = asyncio.create_task(self._read_loop(self._reader), name="display-read")
        return True

    def _close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self._reader = self._writer = None
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()
        self._waiting.clear()

    def _set_connected(self, value: bool) -> None:
        if value != self._connected:
            self._connected = value
            log.info("jackpot display %s", "connected" if value else "LOST")
            if self.on_connection is not None:
                try:
                    self.on_connection(value)
                except Exception:  # a faulty callback must not kill the driver
                    log.exception("jackpot display: on_connection callback failed")

    # ---- commands ----------------------------------------------------------------------------------------

    async def show_meter(self, amount: int, currency: str) -> bool:
        return await self.send("MTR", amount, currency)

    async def show_win(self, seat: int, amount: int, currency: str) -> bool:
        return await self.send("WIN", seat, amount, currency)

    async def show_fault(self, text: str) -> bool:
        return await self.send("FLT", text)

    async def show_pending(self, table: str, amount: int, currency: str) -> bool:
        """A linked progressive's prize pending at ``table``; ``amount``: the link's meter (reseeded)."""
        return await self.send("PND", table, amount, currency)

    async def show_unavailable(self) -> bool:
        """The linked progressive is unavailable: its chips are refused."""
        return await self.send("NAV")

    async def clear(self) -> bool:
        return await self.send("CLR")

    async def ping(self) -> bool:
        return await self.send("PNG")

    async def send(self, cmd: str, *args: str | int) -> bool:
        """Send one command and wait for its ACK (with retries). True when acked, False when the sign is lost.

        Raises ``ProtocolError`` for arguments the line cannot carry and ``DisplayError`` when the sign NAKs
        the command as malformed; neither changes ``connected``.
        """
        async with self._lock:
            seq = self._seq
            self._seq = (self._seq + 1) % 1000
            line = encode(seq, cmd, *args)
            for attempt in range(self.retries + 1):
                if self._writer is None:
                    break
                if attempt:
                    self.stats.retries += 1
                fut: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
                self._waiting[seq] = fut
                try:
                    self._writer.write(line)
                    self.stats.sent += 1
                    reply = await asyncio.wait_for(fut, self.ack_timeout)
                except TimeoutError:
                    self.stats.timeouts += 1
                    continue
                except (asyncio.CancelledError, OSError):
                    task = asyncio.current_task()  # this coroutine's task (never None inside one)
                    if task and task.cancelling():
                        raise
                    break  # the port went away under us
                finally:
                    self._waiting.pop(seq, None)
                if reply.cmd == "ACK":
                    self.stats.acked += 1
                    self._set_connected(True)
                    return True
                self.stats.naks += 1
                code = reply.args[0] if reply.args else ""
                if code in ("BADCMD", "BADARG"):
                    self._set_connected(True)  # the sign is there; the command was wrong
                    raise DisplayError(f"jackpot display refused {cmd}: {code}")
                # CKSUM (line noise): send again
            self._set_connected(False)
            return False

    # ---- background ---------------------------------------------------------------------------------------

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    frame = decode(line)
                except ProtocolError as exc:
                    self.stats.bad_lines += 1
                    log.debug("jackpot display: bad line %r: %s", line, exc)
                    continue
                fut = self._waiting.get(frame.seq)
                if fut is not None and not fut.done() and frame.cmd in ("ACK", "NAK"):
                    fut.set_result(frame)
                else:
                    self.stats.bad_lines += 1  # late or unsolicited reply
        except (OSError, asyncio.IncompleteReadError) as exc:
            log.warning("jackpot display: read failed: %s", exc)
        # port gone (unplugged, pty closed): drop it; the ping loop reopens it
        if self._reader is reader:
            self._close()
            self._set_connected(False)

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ping_interval)
            if self._writer is None:
                if not await self._open():
                    continue
                self.stats.reopened += 1
            await self.ping()
