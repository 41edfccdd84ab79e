"""The shoe driver: serial port -> reliable link -> typed device events; commands -> results.

``ShoeDriver`` keeps the link up on its own: it opens the port (exclusively), says HELLO, waits for IDENTIFY,
then heartbeats; a silence longer than ``silence_timeout``, an unplug or exhausted retries take the link down
(``LinkDown`` event) and it reconnects with exponential backoff (``Identified`` then ``LinkUp`` on success).
Device events are delivered exactly once and in order through ``events()`` (docs/protocol.md §5).

Protocol v2 (docs/protocol.md §5a): every HELLO names the newest event delivered (``resume_after``: at start
the table's last COMMITTED event), and the shoe sends every later one again, so an event acknowledged but not
yet committed when the process died comes back after the restart; one delivered twice is dropped by its
number. A heartbeat from the shoe saying it does not hear us makes us say HELLO again at once; if it still
does not hear us after ``silence_timeout``, the link is declared down (docs/protocol.md §6).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from drivers import events as ev
from drivers.aio import cancel_tasks, drain_queue
from drivers.link import LinkError, LinkStats, ReliableLink
from drivers.protocol import messages as msg
from drivers.protocol.framing import Frame
from drivers.protocol.messages import MsgType
from drivers.serial_port import PortNotFound, open_serial, resolve_port

log = logging.getLogger(__name__)

__all__ = ["LinkError", "LinkStats", "ShoeDevice", "ShoeDriver"]


@runtime_checkable
class ShoeDevice(Protocol):
    """What the layers above need from a shoe (ShoeDriver, or tablebench.fake_shoe.FakeShoe in unit tests)."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def events(self) -> AsyncIterator[ev.DeviceEvent]: ...
    def drain_events(self, limit: int) -> list[ev.DeviceEvent]: ...
    async def command(self, cmd: ev.Command) -> ev.CommandResult: ...
    @property
    def stats(self) -> LinkStats: ...
    @property
    def identity(self) -> ev.Identified | None: ...
    @property
    def connected(self) -> bool: ...


class _SerialProtocol(asyncio.Protocol):
    def __init__(self, owner: ShoeDriver) -> None:
        self.owner = owner
        self.lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.owner._on_bytes(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(f"port closed ({exc})" if exc else "port closed")
        self.owner._wake.set()


class ShoeDriver:
    def __init__(
        self,
        port: str,
        *,
        baudrate: int = 115200,
        ack_timeout: float = 0.2,
        max_retries: int = 5,
        silence_timeout: float = 3.0,
        heartbeat_interval: float = 0.5,
        reconnect_backoff: tuple[float, float] = (0.2, 5.0),
        result_timeout: float = 10.0,
    ) -> None:
        self.port = port
        self.baudrate = baudrate
        self.silence_timeout = silence_timeout
        self.heartbeat_interval = heartbeat_interval
        self.reconnect_backoff = reconnect_backoff
        self.result_timeout = result_timeout
        self._host_session = random.getrandbits(32)
        self._link = ReliableLink(
            name=f"shoe:{port}",
            ack_timeout=ack_timeout,
            max_retries=max_retries,
            on_exhausted=self._exhausted,
        )
        self._events: asyncio.Queue[ev.DeviceEvent] = asyncio.Queue()
        self._results: dict[int, asyncio.Future[ev.CommandResult]] = {}
        self._next_cid = 1
        self._identity: ev.Identified | None = None
        self._boot_id: int | None = None
        self._connected = False
        self._problem = ""  # why the link is not up (``problem``)
        self._last_rx = 0.0
        self._resume: tuple[int, int] = (0, 0)  # (device boot id, event number) delivered up to
        self._gap_check = False  # the resume point names events of this boot: a missing number is a loss
        self._unheard_since: float | None = None  # the shoe's heartbeats say it does not hear us since
        self._last_hello = 0.0
        self._identified = asyncio.Event()
        self._wake = asyncio.Event()  # connection lost or link declared down: end the heartbeat wait early
        self._down: asyncio.Future[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self._transport: asyncio.Transport | None = None

    # ---- public API -------------------------------------------------------------------------------------

    @property
    def stats(self) -> LinkStats:
        return self._link.snapshot(self._connected)

    @property
    def identity(self) -> ev.Identified | None:
        return self._identity

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def problem(self) -> str:
        """Why the link is not up, in words: the port not found (not plugged in), the port that cannot be
        opened, a shoe that does not answer, or why the link went down; "" while it is up, and before the first
        attempt to reach the shoe has failed."""
        return "" if self._connected else self._problem

    @property
    def ever_connected(self) -> bool:
        """The link was up at least once since the driver started."""
        return self._link.counters.connects > 0

    def resume_after(self, boot_id: int, event_no: int) -> None:
        """The newest device event the table has committed (docs/protocol.md §5a), before ``start()``: the
        first HELLO asks the shoe for every event after it. Boot id 0: nothing to resume. Ignored once the
        driver has started: its own point (what it has delivered) is newer, and going back would deliver
        events twice."""
        if self._task is not None:
            log.info("shoe: resume point given after start ignored (the driver keeps %s)", self._resume)
            return
        self._resume = (boot_id & 0xFFFFFFFF, max(0, event_no) & 0xFFFFFFFF)

    def resend_after(self, boot_id: int, event_no: int) -> bool:
        """The table could not commit the events it was given after (boot_id, event_no) (its journal failed,
        issue 14): the shoe sends every later event again (docs/protocol.md §5a). On a live link the driver
        says HELLO again at once with that resume point; on a link that is down, the HELLO that brings it up
        names it. Only ever backwards within the same boot; True if asked."""
        boot, delivered = self._resume
        if boot_id != boot or not 0 <= event_no < delivered:
            return False
        log.warning("shoe: asking again for the events after #%d (delivered up to #%d)", event_no, delivered)
        ev.drop_queued_after(self._events, event_no)  # the ones after the point come again: not twice
        self._resume = (boot, event_no)
        if self._connected:
            self._send_hello()
        return True

    @property
    def resume_point(self) -> tuple[int, int]:
        """(device boot id, event number) of the newest event delivered through ``events()``."""
        return self._resume

    async def start(self) -> None:
        if self._task is None:
            self._link.start()
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"shoe-driver:{self.port}")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_tasks([self._task])
            self._task = None
        self._go_down("driver stopped", emit=self._connected)
        await self._link.close()

    async def events(self) -> AsyncIterator[ev.DeviceEvent]:
        """Every device event exactly once, in device order, plus LinkUp/LinkDown injected by the driver."""
        while True:
            yield await self._events.get()

    def drain_events(self, limit: int) -> list[ev.DeviceEvent]:
        """Events already received, without waiting (up to ``limit``): lets the table commit a burst at once."""
        return drain_queue(self._events, limit)

    async def next_event(self, timeout: float | None = None) -> ev.DeviceEvent:
        """Convenience for tests and scripts: the next event (asyncio.TimeoutError after ``timeout``)."""
        return await asyncio.wait_for(self._events.get(), timeout)

    async def command(self, cmd: ev.Command) -> ev.CommandResult:
        """Send a command and wait for its result. Raises LinkError when the link is down or gives up."""
        if not self._connected:
            raise LinkError("shoe link is down")
        cid = self._next_cid
        self._next_cid = (self._next_cid % 0xFFFF) + 1
        type_, payload = msg.encode_command(cid, cmd)
        fut: asyncio.Future[ev.CommandResult] = asyncio.get_running_loop().create_future()
        self._results[cid] = fut
        try:
            await self._link.send(type_, payload)
            return await asyncio.wait_for(asyncio.shield(fut), self.result_timeout)
        except TimeoutError as exc:
            raise LinkError(f"no result for {type(cmd).__name__} within {self.result_timeout} s") from exc
        finally:
            self._results.pop(cid, None)

    # ---- connection loop --------------------------------------------------------------------------------

    async def _run(self) -> None:
        low, high = self.reconnect_backoff
        delay = low
        while True:
            try:
                path = resolve_port(self.port)
                transport, proto = await open_serial(
                    path, lambda: _SerialProtocol(self), baudrate=self.baudrate
                )
            except Exception as exc:  # PortNotFound, SerialException (busy, vanished), OSError
                self._problem = (
                    f"not plugged in: {exc}"
                    if isinstance(exc, PortNotFound)
                    else f"cannot open {self.port}: {exc}"
                )
                log.info("shoe: cannot open %s: %s (retry in %.1f s)", self.port, exc, delay)
                await asyncio.sleep(delay)
                delay = min(high, delay * 2)
                continue
            assert isinstance(proto, _SerialProtocol)
            opened = time.monotonic()
            try:
                was_up = await self._session(transport, proto)
            finally:
                if not transport.is_closing():  # a read error closed it already: a second close races
                    transport.abort()  # pyserial-asyncio-fast's first one ("Task exception was never retrieved")
                self._link.attach(None)
                self._transport = None
            if was_up or self._link.last_valid_rx >= opened:
                # up, or a shoe that answers with valid frames but whose IDENTIFY the line spoilt: try again
                # soon (a noisy line, docs/protocol.md §6), not after a growing backoff
                delay = low
                if not was_up:
                    await asyncio.sleep(delay)
            else:
                await asyncio.sleep(delay)
                delay = min(high, delay * 2)

    async def _session(self, transport: asyncio.Transport, proto: _SerialProtocol) -> bool:
        """One connection: handshake, then heartbeat until something takes the link down."""
        loop = asyncio.get_running_loop()
        self._transport = transport
        self._down = loop.create_future()
        self._identified.clear()
        self._link.accept_reliable = False
        self._link.attach(transport.write)
        self._last_rx = time.monotonic()
        self._unheard_since = None
        # Handshake: HELLO every heartbeat until IDENTIFY, for at most one silence timeout.
        deadline = time.monotonic() + self.silence_timeout
        while not self._identified.is_set():
            if proto.lost.done() or time.monotonic() > deadline:
                self._problem = f"no answer on {self.port} (no IDENTIFY)"
                log.info("shoe: no IDENTIFY from %s", self.port)
                return False
            self._send_hello()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._identified.wait(), self.heartbeat_interval)
        self._link.counters.connects += 1
        self._connected = True
        self._link.accept_reliable = True
        self._link.resume_tx()
        assert self._identity is not None
        self._events.put_nowait(self._identity)
        self._events.put_nowait(ev.LinkUp())
        log.info("shoe: link up: %s", self._identity)
        while True:
            if proto.lost.done():
                self._go_down(f"unplugged: {proto.lost.result()}")
                return True
            if self._down.done():
                return True
            now = time.monotonic()
            if now - max(self._last_rx, self._link.last_valid_rx) > self.silence_timeout:
                self._go_down(f"silence for more than {self.silence_timeout} s")
                return True
            if self._unheard_since is not None and now - self._unheard_since > self.silence_timeout:
                self._go_down(
                    f"one-sided link: the shoe has not heard the controller for more than {self.silence_timeout} s"
                )
                return True
            hb = msg.Heartbeat(hears_peer=True, last_rx_seq=self._link.last_rx_seq)
            self._link.send_unreliable(MsgType.HEARTBEAT, msg.encode_heartbeat(hb))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.heartbeat_interval)

    def _send_hello(self) -> None:
        boot, after = self._resume
        hello = msg.Hello(msg.PROTOCOL_VERSION, self._host_session, boot, after)
        self._last_hello = time.monotonic()
        self._link.send_unreliable(MsgType.HELLO, msg.encode_hello(hello))

    def _exhausted(self) -> None:
        self._go_down("retries exhausted")

    def _go_down(self, reason: str, *, emit: bool = True) -> None:
        if self._down is not None and not self._down.done():
            self._down.set_result(reason)
        self._wake.set()
        self._link.accept_reliable = False
        self._link.pause_tx()
        self._link.fail_pending(LinkError(f"shoe link down: {reason}"))
        self._problem = f"link down: {reason}"
        for fut in self._results.values():
            if not fut.done():
                fut.set_exception(LinkError(f"shoe link down: {reason}"))
        if self._connected:
            self._connected = False
            self._link.counters.link_downs += 1
            log.warning("shoe: link down: %s", reason)
            if emit:
                self._events.put_nowait(ev.LinkDown(reason=reason))

    # ---- receiving --------------------------------------------------------------------------------------

    def _on_bytes(self, data: bytes) -> None:
        for frame in self._link.feed(data):
            self._last_rx = time.monotonic()
            try:
                self._on_frame(frame)
            except msg.DecodeError as exc:
                self._link.counters.payload_errors += 1
                log.warning("shoe: bad payload: %s", exc)

    def _on_frame(self, frame: Frame) -> None:
        t = frame.type
        if t == MsgType.HEARTBEAT:
            self._on_heartbeat(msg.decode_heartbeat(frame.payload))
            return
        if t == MsgType.IDENTIFY:
            ident = msg.decode_identify(frame.payload)
            if ident.identified.protocol_version != msg.PROTOCOL_VERSION:
                log.error(
                    "shoe: device speaks protocol v%d, this driver v%d: link stays down",
                    ident.identified.protocol_version,
                    msg.PROTOCOL_VERSION,
                )
                return
            rebooted = ident.boot_id != self._boot_id
            if rebooted:
                self._link.reset_rx()  # the device restarted: its SEQs start again
                self._boot_id = ident.boot_id
            if ident.boot_id != self._resume[0]:
                # Another boot than the resume point's: the shoe sends every event of this boot it holds
                # (none if we named no boot at all: then its first event sets the base, without a gap).
                self._gap_check = self._resume[0] != 0
                self._resume = (ident.boot_id, 0)
            self._unheard_since = None
            self._identity = ident.identified
            if self._connected and rebooted:  # a HELLO said again on a live link met a rebooted shoe
                self._events.put_nowait(ident.identified)
            self._identified.set()
            return
        if t == MsgType.COMMAND_RESULT:
            res = msg.decode_result(frame.payload)
            fut = self._results.get(res.command_id)
            if fut is not None and not fut.done():
                fut.set_result(res.result)
            else:
                log.warning("shoe: result for unknown command id %d", res.command_id)
            return
        if msg.MsgType.CARD_OUT <= t < msg.MsgType.COMMAND_RESULT:
            e = msg.decode_numbered_event(t, frame.payload)
            boot, last = self._resume
            if e.event_no <= last:  # sent again after a resume point: delivered already
                self._link.counters.replayed += 1
                return
            if e.event_no != last + 1 and (last or self._gap_check):
                missed = e.event_no - last - 1
                self._link.counters.events_missed += missed
                log.error(
                    "shoe: %d event(s) after #%d never arrived (the shoe no longer holds them)", missed, last
                )
            self._resume, self._gap_check = (boot, e.event_no), True
            self._events.put_nowait(e)
            return
        self._link.counters.unknown_types += 1
        log.warning("shoe: unknown or unexpected frame type 0x%02X dropped", t)

    def _on_heartbeat(self, hb: msg.Heartbeat) -> None:
        """One-sided link (docs/protocol.md §6): we hear the shoe but it does not hear us. Say HELLO again at
        once (at most once per heartbeat interval): it resumes sending; if it stays deaf, the session loop
        takes the link down after ``silence_timeout``."""
        if not self._connected:
            return
        if hb.hears_peer:
            self._unheard_since = None
            return
        now = time.monotonic()
        if self._unheard_since is None:
            self._unheard_since = now
            self._link.counters.unheard += 1
            log.warning("shoe: the shoe does not hear the controller: HELLO again")
        if now - self._last_hello >= self.heartbeat_interval:
            self._send_hello()
