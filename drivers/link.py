"""Reliable link over the framing (docs/protocol.md §5): stop-and-wait with acks, retransmission with
exponential backoff, duplicate suppression and link statistics. Shared by the host driver and the emulator.

Transport-agnostic: the owner feeds received bytes in and gives a ``write(bytes)`` callable. One message is in
flight per direction, so order is preserved; the receiver re-acks a duplicate (same SEQ as the last one it
accepted) but never delivers it twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from drivers.aio import cancel_tasks
from drivers.protocol.framing import Frame, FrameDecoder, encode_frame
from drivers.protocol.messages import MsgType

log = logging.getLogger(__name__)

RELIABLE_MIN_TYPE = 0x10  # every type >= 0x10 is acknowledged, known or not (forward compatibility)


class LinkError(Exception):
    """The link is down or a message could not be delivered within the retry budget."""


@dataclass(frozen=True, slots=True)
class LinkStats:
    """A snapshot of the link counters (cumulative over reconnects)."""

    connected: bool = False
    frames_in: int = 0
    frames_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    crc_errors: int = 0
    bad_frames: int = 0  # framing errors plus CRC-valid frames whose payload does not parse
    oversized: int = 0
    garbage_bytes: int = 0
    unknown_types: int = 0
    retransmits: int = 0
    duplicates: int = 0
    link_downs: int = 0
    connects: int = 0
    rtt_last_ms: float | None = None
    rtt_avg_ms: float | None = None
    # protocol v2 (docs/protocol.md §5a, §6)
    replayed: int = 0  # events received again after a resume point (already delivered): dropped
    events_missed: int = 0  # event numbers never received (the shoe's replay buffer no longer held them)
    unheard: int = 0  # heartbeats saying the peer does not hear us (one-sided link): HELLO sent again


@dataclass(slots=True)
class _Pending:
    type: int
    payload: bytes
    future: asyncio.Future[None]
    seq: int = -1
    tag: int = 0  # the owner's label (the emulator: the event number, to replace the queue on a replay)


@dataclass(slots=True)
class _Counters:
    frames_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    unknown_types: int = 0
    payload_errors: int = 0
    retransmits: int = 0
    duplicates: int = 0
    link_downs: int = 0
    connects: int = 0
    rtt_last_ms: float | None = None
    rtt_sum_ms: float = 0.0
    rtt_n: int = 0
    replayed: int = 0
    events_missed: int = 0
    unheard: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class ReliableLink:
    """One end of the link. ``max_retries=None`` retransmits forever (the device keeps events until acked)."""

    def __init__(
        self,
        *,
        name: str,
        ack_timeout: float = 0.2,
        max_retries: int | None = 5,
        backoff_cap: float = 2.0,
        on_exhausted: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.decoder = FrameDecoder(name)
        self.counters = _Counters()
        self.ack_timeout = ack_timeout
        self.max_retries = max_retries
        self.backoff_cap = backoff_cap
        self.accept_reliable = False  # the owner enables it once the handshake is done
        self._on_exhausted = on_exhausted
        self._write: Callable[[bytes], None] | None = None
        self._queue: deque[_Pending] = deque()
        self._wakeup = asyncio.Event()
        self._acked = asyncio.Event()
        self._tx_enabled = asyncio.Event()
        self._kick = asyncio.Event()  # resume/pause/fail: interrupts the ack wait of the in-flight message
        self._next_seq = 0
        self._last_rx_seq: int | None = None
        self._inflight: _Pending | None = None
        self._task: asyncio.Task[None] | None = None
        self.last_valid_rx = 0.0  # monotonic time of the last valid frame of any type (acks included)

    # ---- wiring -----------------------------------------------------------------------------------------

    def attach(self, write: Callable[[bytes], None] | None) -> None:
        """Set (or clear, with None) the byte sink; a new connection also starts a fresh frame."""
        self._write = write
        self.decoder.reset()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._tx_loop(), name=f"{self.name}-tx")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_tasks([self._task])
            self._task = None
        self.fail_pending(LinkError("link closed"))

    def resume_tx(self) -> None:
        """Allow (re)transmission; an in-flight message is sent again at once with a fresh retry budget."""
        self._tx_enabled.set()
        self._wakeup.set()
        self._kick.set()

    def pause_tx(self) -> None:
        self._tx_enabled.clear()
        self._kick.set()

    def reset_rx(self) -> None:
        """Forget the last accepted SEQ (the peer restarted: its SEQs start again)."""
        self._last_rx_seq = None

    def fail_pending(self, exc: Exception) -> None:
        while self._queue:
            p = self._queue.popleft()
            if not p.future.done():
                p.future.set_exception(exc)
        self._wakeup.set()
        self._kick.set()

    # ---- sending ----------------------------------------------------------------------------------------

    def send_unreliable(self, type_: int, payload: bytes = b"", seq: int = 0) -> None:
        self._emit(encode_frame(seq, type_, payload))

    def send(self, type_: int, payload: bytes = b"", *, tag: int = 0) -> asyncio.Future[None]:
        """Queue an acknowledged message; the future completes on its ack (or fails with LinkError)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(type_, payload, fut, tag=tag))
        self._wakeup.set()
        return fut

    def drop_tagged(self) -> int:
        """Take every queued message with a tag out of the queue (their futures are cancelled), the one in
        flight included: the owner queues them again in another order (the emulator's replay). Returns how
        many were dropped."""
        dropped = 0
        for p in list(self._queue):
            if p.tag:
                if not p.future.done():
                    p.future.cancel()
                if p is not self._inflight:  # the tx loop takes the one in flight out itself
                    self._queue.remove(p)
                dropped += 1
        self._wakeup.set()
        self._kick.set()
        return dropped

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def last_rx_seq(self) -> int | None:
        """The SEQ of the last reliable frame accepted from the peer (None since its (re)start)."""
        return self._last_rx_seq

    def _emit(self, data: bytes) -> None:
        if self._write is None:
            return
        self.counters.frames_out += 1
        self.counters.bytes_out += len(data)
        try:
            self._write(data)
        except OSError as exc:  # a vanished port: the owner notices through its own read/close path
            log.debug("%s: write failed: %s", self.name, exc)

    async def _tx_loop(self) -> None:
        while True:
            while not self._queue or not self._tx_enabled.is_set():
                self._wakeup.clear()
                await self._wakeup.wait()
            p = self._queue[0]
            if p.future.done():  # failed by the owner
                self._queue.popleft()
                continue
            if p.seq < 0:
                p.seq = self._next_seq
                self._next_seq = (self._next_seq + 1) & 0xFF
            self._inflight = p
            await self._deliver(p)
            if self._queue and self._queue[0] is p:
                self._queue.popleft()
            self._inflight = None

    async def _deliver(self, p: _Pending) -> None:
        attempt = 0
        while not p.future.done():
            if not self._tx_enabled.is_set():
                await self._tx_enabled.wait()
                attempt = 0
                continue
            self._acked.clear()
            self._kick.clear()
            if attempt:
                self.counters.retransmits += 1
            sent_at = time.monotonic()
            self._emit(encode_frame(p.seq, p.type, p.payload))
            outcome = await self._wait_ack(min(self.ack_timeout * (2**attempt), self.backoff_cap))
            if outcome == "acked":
                if attempt == 0:  # Karn's rule: only unambiguous round-trip samples
                    self._record_rtt((time.monotonic() - sent_at) * 1000.0)
                if not p.future.done():  # the caller may have been cancelled meanwhile
                    p.future.set_result(None)
                return
            if outcome == "kick":  # resumed (new connection), paused or failed: fresh retry budget
                attempt = 0
                continue
            attempt += 1
            if self.max_retries is not None and attempt > self.max_retries:
                log.warning(
                    "%s: no ack for type 0x%02X seq %d after %d retries",
                    self.name,
                    p.type,
                    p.seq,
                    self.max_retries,
                )
                if not p.future.done():
                    p.future.set_exception(LinkError(f"no acknowledgement after {self.max_retries} retries"))
                if self._on_exhausted is not None:
                    self._on_exhausted()
                return

    async def _wait_ack(self, timeout: float) -> str:
        ack = asyncio.ensure_future(self._acked.wait())
        kick = asyncio.ensure_future(self._kick.wait())
        try:
            await asyncio.wait({ack, kick}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ack.cancel()
            kick.cancel()
        if self._acked.is_set():
            return "acked"
        return "kick" if self._kick.is_set() else "timeout"

    def _record_rtt(self, ms: float) -> None:
        c = self.counters
        c.rtt_last_ms = ms
        c.rtt_sum_ms += ms
        c.rtt_n += 1

    # ---- receiving --------------------------------------------------------------------------------------

    def _ack_taken(self, frame: Frame) -> bool:
        """The ack of the frame in flight arrived (a bench's emulated device may pretend it was lost)."""
        return True

    def feed(self, data: bytes) -> list[Frame]:
        """Decode bytes; acks are consumed, reliable frames acked and de-duplicated. Returns new frames."""
        self.counters.bytes_in += len(data)
        out: list[Frame] = []
        for frame in self.decoder.feed(data):
            self.last_valid_rx = time.monotonic()
            if frame.type == MsgType.ACK:
                p = self._inflight
                if p is not None and frame.seq == p.seq and self._ack_taken(frame):
                    self._acked.set()
                continue
            if frame.type < RELIABLE_MIN_TYPE:
                out.append(frame)
                continue
            if not self.accept_reliable:
                continue  # before the handshake: not acked, the peer will send it again
            self.send_unreliable(MsgType.ACK, seq=frame.seq)
            if frame.seq == self._last_rx_seq:
                self.counters.duplicates += 1
                log.info(
                    "%s: duplicate seq %d (type 0x%02X) re-acked, not delivered",
                    self.name,
                    frame.seq,
                    frame.type,
                )
                continue
            self._last_rx_seq = frame.seq
            out.append(frame)
        return out

    # ---- statistics -------------------------------------------------------------------------------------

    def snapshot(self, connected: bool) -> LinkStats:
        c, f = self.counters, self.decoder.stats
        return LinkStats(
            connected=connected,
            frames_in=f.frames_ok,
            frames_out=c.frames_out,
            bytes_in=c.bytes_in,
            bytes_out=c.bytes_out,
            crc_errors=f.crc_errors,
            bad_frames=f.bad_frames + c.payload_errors,
            oversized=f.oversized,
            garbage_bytes=f.garbage_bytes,
            unknown_types=c.unknown_types,
            retransmits=c.retransmits,
            duplicates=c.duplicates,
            link_downs=c.link_downs,
            connects=c.connects,
            rtt_last_ms=c.rtt_last_ms,
            rtt_avg_ms=(c.rtt_sum_ms / c.rtt_n) if c.rtt_n else None,
            replayed=c.replayed,
            events_missed=c.events_missed,
            unheard=c.unheard,
        )
