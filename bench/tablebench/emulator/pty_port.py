"""The emulated shoe's serial port: a pseudo-terminal in raw mode behind a stable symlink, read and written
without blocking. Its output buffer is bounded like a UART FIFO with nobody reading: beyond it, bytes are
dropped (and counted). Closing it is the host's hang-up; opening it again makes a new pty behind the same
symlink."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tty
from collections.abc import Callable

log = logging.getLogger(__name__)

OUTBUF_MAX = 64 * 1024  # like a UART FIFO with nobody reading: beyond this, bytes are dropped


class PtyPort:
    def __init__(self, on_bytes: Callable[[bytes], None], *, link_path: str | None = None) -> None:
        self.on_bytes = on_bytes  # every chunk read from the host, as read
        self.link_path = link_path
        self.device_path: str | None = None
        self.dropped_out_bytes = 0
        self._master: int | None = None
        self._slave: int | None = None
        self._outbuf = bytearray()
        self._writer_added = False

    @property
    def is_open(self) -> bool:
        return self._master is not None

    def open(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline: a byte pipe like a UART
        # We keep our own slave fd open so the master never sees EIO while the host is disconnected.
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self.device_path = os.ttyname(slave)
        if self.link_path:
            tmp = f"{self.link_path}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(self.device_path, tmp)
            os.replace(tmp, self.link_path)  # atomic: the host never sees a half-made link
        asyncio.get_running_loop().add_reader(master, self._readable)
        log.info("emulator: pty %s (link %s)", self.device_path, self.link_path)

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        if self._master is not None:
            loop.remove_reader(self._master)
            if self._writer_added:
                loop.remove_writer(self._master)
                self._writer_added = False
            os.close(self._master)
            self._master = None
        if self._slave is not None:
            os.close(self._slave)
            self._slave = None
        self._outbuf.clear()

    def remove_link(self) -> None:
        """The symlink goes (the device is unplugged or stopped): the host finds no device behind it."""
        if self.link_path and os.path.islink(self.link_path):
            with contextlib.suppress(OSError):
                os.unlink(self.link_path)

    def write(self, data: bytes) -> None:
        """Bytes to the host as is; what does not fit in the output buffer is dropped."""
        if self._master is None:
            return
        room = OUTBUF_MAX - len(self._outbuf)
        if len(data) > room:
            self.dropped_out_bytes += len(data) - room
            data = data[:room]
        self._outbuf += data
        self._flush()

    def _flush(self) -> None:
        if self._master is None:
            return
        try:
            n = os.write(self._master, self._outbuf) if self._outbuf else 0
            del self._outbuf[:n]
        except BlockingIOError:
            pass
        except OSError as exc:
            log.warning("emulator: write failed: %s", exc)
            self._outbuf.clear()
        loop = asyncio.get_running_loop()
        if self._outbuf and not self._writer_added:
            loop.add_writer(self._master, self._flush)
            self._writer_added = True
        elif not self._outbuf and self._writer_added:
            loop.remove_writer(self._master)
            self._writer_added = False

    def _readable(self) -> None:
        assert self._master is not None
        try:
            data = os.read(self._master, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if data:
            self.on_bytes(data)
