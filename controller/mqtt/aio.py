"""Drive one connected paho client from the asyncio loop: no network thread.

paho's own thread (``loop_start``) costs a socket-pair wake-up per PUBLISH, a thread hand-over per PUBACK and
the GIL traffic between them; the table publishes about five messages per card (docs/performance.md). Here the
loop watches the client's socket instead: readable -> ``loop_read``, writable while paho has packets queued ->
``loop_write``, once a second -> ``loop_misc`` (keepalive PINGREQ, a broker that stopped answering). paho's
callbacks then run in the loop's thread; the link still hands their work over with ``call_soon`` semantics.

The blocking TCP/TLS connect stays in a worker thread (``MqttLink._supervise``); this driver takes the client
over once ``connect()`` returned, and gives it back (nothing registered) when the session is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

import paho.mqtt.client as mqtt

MISC_PERIOD_S = 1.0  # keepalive bookkeeping, as paho's own loop does between selects


class LoopDriver:
    def __init__(self, client: mqtt.Client, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop
        self._fd: int | None = None
        self._writing = False  # a writer is registered: the socket buffer was full
        self._flush_scheduled = False
        self._misc: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Call in the loop, after ``client.connect()`` returned (its CONNECT packet is written already)."""
        sock = self.client.socket()
        if sock is None:
            return  # closed before we got it: the session-end callback has run or will run
        self._fd = sock.fileno()
        c = self.client
        c.on_socket_close = self._on_close
        c.on_socket_register_write = lambda _c, _u, _s: self._want_write(True)
        c.on_socket_unregister_write = lambda _c, _u, _s: self._want_write(False)
        self.loop.add_reader(self._fd, self._readable)
        if c.want_write():
            self._want_write(True)
        self._misc = self.loop.create_task(self._misc_loop(), name="mqtt-misc")

    def stop(self) -> None:
        """Flush what paho still holds (e.g. the DISCONNECT of a clean stop), then let go of the socket."""
        if self._fd is not None and self.client.want_write():
            with contextlib.suppress(OSError, ValueError):
                self.client.loop_write()
        self._release()
        c = self.client
        c.on_socket_close = None
        c.on_socket_register_write = None
        c.on_socket_unregister_write = None
        if self._misc is not None:
            self._misc.cancel()
            self._misc = None

    # ---- socket events ----
    def _readable(self) -> None:
        self.client.loop_read()
        # TLS: one socket read may have decrypted more than paho took; the fd will not signal it again.
        sock = self.client.socket()
        while isinstance(sock, ssl.SSLSocket) and sock.pending() and self.client.socket() is sock:
            self.client.loop_read()

    def _writable(self) -> None:
        self.client.loop_write()  # paho unregisters the writer once its queue is empty

    def _want_write(self, on: bool) -> None:
        """paho has packets queued (on) or none left (off). The socket is nearly always writable, so the
        packets queued during one loop pass go out together at the start of the next (``call_soon``), with no
        epoll change; a writer is registered only when the socket buffer is full."""
        if self._fd is None:
            return
        if on and not (self._flush_scheduled or self._writing):
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)
        elif not on and self._writing:
            self._writing = False
            self.loop.remove_writer(self._fd)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._fd is None:
            return
        self.client.loop_write()
        if self._fd is not None and self.client.want_write() and not self._writing:
            self._writing = True  # the kernel took only part: wait until the socket drains
            self.loop.add_writer(self._fd, self._writable)

    def _on_close(self, _client: Any, _userdata: Any, _sock: Any) -> None:
        self._release()  # paho closes the socket itself, right after this

    def _release(self) -> None:
        if self._fd is None:
            return
        if self._writing:
            self.loop.remove_writer(self._fd)
            self._writing = False
        self.loop.remove_reader(self._fd)
        self._fd = None

    async def _misc_loop(self) -> None:
        while self._fd is not None:
            await asyncio.sleep(MISC_PERIOD_S)
            if self.client.loop_misc() != mqtt.MQTT_ERR_SUCCESS:
                return
