"""The emulated shoe device: a pseudo-terminal speaking protocol v2 as the real shoe would.

It opens a pty, points a stable symlink at the slave, answers HELLO with IDENTIFY, heartbeats, sends every
event reliably (retransmitting until acked, across reconnects: nothing is lost while the host is away), keeps
the numbered events after their ack and sends again every one after the resume point each HELLO names
(docs/protocol.md §5a: nothing acknowledged is lost before the host committed it), and executes commands on
the ``ShoeModel``. Faults (line noise, silence, unplug, lost acks, raw bytes) are
injected here; the control socket (bench/tablebench/emulator/control.py) drives it at run time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import random
import time
import tty
from collections import deque
from typing import Any

from drivers import events as ev
from drivers.link import ReliableLink
from drivers.protocol import messages as msg
from drivers.protocol.framing import Frame
from drivers.protocol.messages import ErrorCode, MsgType
from tablebench.emulator.model import Refused, ShoeModel
from tablebench.emulator.scenario import Scenario

log = logging.getLogger(__name__)

_OUTBUF_MAX = 64 * 1024  # like a UART FIFO with nobody reading: beyond this, bytes are dropped
REPLAY_BUFFER = 4096  # acknowledged events kept for a replay (>= msg.REPLAY_BUFFER_MIN, docs/protocol.md §5a)


class LossyAckLink(ReliableLink):
    """The emulated shoe's link: the control socket's ``lose_acks`` makes it pretend the next N acks of its
    frame in flight were lost (it sends the frame again). Fault injection lives here, not in drivers/link.py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ignore_acks = 0

    def _ack_taken(self, frame: Frame) -> bool:
        if self.ignore_acks > 0:
            self.ignore_acks -= 1
            return False
        return True


class EmulatedShoe:
    def __init__(self, scenario: Scenario, *, link_path: str | None = None) -> None:
        self.sc = scenario
        self.model = ShoeModel(scenario)
        self.link_path = link_path
        self.device_path: str | None = None
        self.boot_id = random.getrandbits(32)
        self.link = LossyAckLink(
            name="emulator", ack_timeout=scenario.ack_timeout_s, max_retries=None, backoff_cap=1.0
        )
        self.bit_error_rate = scenario.bit_error_rate
        self.byte_error_rate = scenario.byte_error_rate
        self.drop_rate = scenario.drop_rate
        self.noise_direction = "both"  # or "to_host" / "to_device": a line bad in one direction only
        self._noise = random.Random(scenario.seed + 1 if scenario.seed is not None else None)
        self._master: int | None = None
        self._slave: int | None = None
        self._outbuf = bytearray()
        self._writer_added = False
        self._host_session: int | None = None
        self._host_present = False
        self._last_host_rx = 0.0
        self._silent_until = 0.0
        self._unplugged = False
        self._started = time.monotonic()
        # Numbered events (docs/protocol.md §5a): every event since boot that is not acknowledged, and at
        # least the last REPLAY_BUFFER acknowledged ones, oldest first: (event_no, type, payload).
        self.event_no = 0
        self.acked_upto = 0  # every event up to this number has been acknowledged (in order: stop-and-wait)
        self.history: deque[tuple[int, int, bytes]] = deque()
        self.replays = 0  # HELLOs that asked for events again (state op)
        self.replayed_events = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: list[asyncio.TimerHandle] = []
        self.dropped_out_bytes = 0
        # (shoe_seq, wall-clock time) of each card as it leaves the shoe, for the benchmarks' latency figures
        # (control op ``card_times``); bounded so a long run never grows it.
        self.card_times: deque[tuple[int, float]] = deque(maxlen=100_000)

    # ---- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.link.attach(self._write)
        self.link.start()
        self._open_pty()
        self.spawn(self._heartbeat_loop())

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await t
        for h in self._timers:
            h.cancel()
        await self.link.close()
        self._close_pty()
        if self.link_path and os.path.islink(self.link_path):
            with contextlib.suppress(OSError):
                os.unlink(self.link_path)

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _open_pty(self) -> None:
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
        self._unplugged = False
        log.info("emulator: pty %s (link %s)", self.device_path, self.link_path)

    def _close_pty(self) -> None:
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

    # ---- bytes in/out -----------------------------------------------------------------------------------

    def _line_noise(self, data: bytes, *, to_device: bool) -> bytes:
        if not (self.bit_error_rate or self.byte_error_rate or self.drop_rate):
            return data
        if self.noise_direction != "both" and (self.noise_direction == "to_device") != to_device:
            return data
        rng, out = self._noise, bytearray()
        for b in data:
            if self.drop_rate and rng.random() < self.drop_rate:
                continue
            if self.byte_error_rate and rng.random() < self.byte_error_rate:
                b = rng.randrange(256)
            if self.bit_error_rate:
                for bit in range(8):
                    if rng.random() < self.bit_error_rate:
                        b ^= 1 << bit
            out.append(b)
        return bytes(out)

    def _silent(self) -> bool:
        return time.monotonic() < self._silent_until

    def _write(self, data: bytes) -> None:
        if self._master is None or self._silent():
            return
        self.write_raw(self._line_noise(data, to_device=False))

    def write_raw(self, data: bytes) -> None:
        """Bytes to the host as is (also used by the control op ``send_raw``)."""
        if self._master is None:
            return
        room = _OUTBUF_MAX - len(self._outbuf)
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
        if self._silent() or not data:
            return
        for frame in self.link.feed(self._line_noise(data, to_device=True)):
            self._last_host_rx = time.monotonic()
            try:
                self._on_frame(frame)
            except msg.DecodeError as exc:
                self.link.counters.payload_errors += 1
                log.warning("emulator: bad payload from host: %s", exc)

    # ---- protocol ---------------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000) & 0xFFFFFFFF

    def identified(self) -> ev.Identified:
        return ev.Identified(
            msg.PROTOCOL_VERSION,
            self.sc.model,
            self.sc.firmware,
            self.sc.serial_number,
            self.sc.decks,
            self.sc.continuous,
            device_time_ms=self.now_ms(),
        )

    def _on_frame(self, frame: Frame) -> None:
        t = frame.type
        if t == MsgType.HEARTBEAT:
            return
        if t == MsgType.HELLO:
            hello = msg.decode_hello(frame.payload)
            self.link.send_unreliable(
                MsgType.IDENTIFY, msg.encode_identify(msg.Identify(self.identified(), self.boot_id))
            )
            if hello.protocol_version != msg.PROTOCOL_VERSION:
                # The host will refuse our IDENTIFY (another version): nothing is sent to it.
                log.warning("emulator: host speaks protocol v%d, not v%d", hello.protocol_version,
                            msg.PROTOCOL_VERSION)  # fmt: skip
                return
            if hello.host_session != self._host_session:
                self.link.reset_rx()  # a new host process: its SEQs start again
                self._host_session = hello.host_session
            self._replay(hello)
            self.link.accept_reliable = True
            self._host_present = True
            self.link.resume_tx()  # anything pending goes again at once
            return
        if MsgType.LOCK_LID <= t <= MsgType.SET_WARNING_LIGHT:
            self._on_command(t, frame.payload)
            return
        self.link.counters.unknown_types += 1
        log.warning("emulator: unexpected frame type 0x%02X from host", t)

    def _on_command(self, type_: int, payload: bytes) -> None:
        try:
            cid, cmd = msg.decode_command(type_, payload)
        except msg.DecodeError as exc:
            cid = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 0
            self._result(cid, ev.CommandResult(False, ErrorCode.BAD_ARGUMENT, str(exc)))
            return
        m = self.model
        try:
            match cmd:
                case ev.LockLid():
                    evs = m.lock()
                case ev.UnlockLid():
                    evs = m.unlock()
                case ev.OpenLid():
                    evs = m.open_lid()
                case ev.StartShuffle():
                    evs = m.start_shuffle()
                case ev.Dispense():
                    evs = self._draw(cmd.count)
                case ev.ReportCounts():
                    evs = m.counts()
                case ev.RunDeckCheck():
                    evs = m.deck_check()
                case ev.SetWarningLight():
                    m.warning_light = cmd.on
                    evs = []
                case _:
                    raise Refused(ErrorCode.UNKNOWN_COMMAND, f"unknown command {cmd!r}")
        except Refused as r:
            self._result(cid, ev.CommandResult(False, int(r.code), r.text))
            return
        self.emit(evs)
        self._result(cid, ev.CommandResult(True))

    def _replay(self, hello: msg.Hello) -> None:
        """docs/protocol.md §5a: every numbered event after the host's resume point goes (again), in order;
        the ones up to it are committed by the host and never sent again. A resume point from another boot
        of this device means the host holds none of this boot's events; boot id 0: the host asks for none."""
        if hello.resume_boot_id == 0:
            return
        after = hello.resume_after if hello.resume_boot_id == self.boot_id else 0
        self.link.drop_tagged()
        again = [(no, t, p) for no, t, p in self.history if no > after]
        for no, t, p in again:
            self._send_numbered(no, t, p)
        self.replays += 1
        self.replayed_events += sum(1 for no, _, _ in again if no <= self.acked_upto)

    def _send_numbered(self, no: int, type_: int, payload: bytes) -> None:
        fut = self.link.send(type_, payload, tag=no)
        fut.add_done_callback(lambda f, no=no: self._acked(no, f))

    def _acked(self, no: int, fut: asyncio.Future[None]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return  # dropped for a replay (queued again) or the link closed
        self.acked_upto = max(self.acked_upto, no)
        # the history is contiguous (event numbers without holes), so the acknowledged ones are a prefix
        while self.history and self.acked_upto - self.history[0][0] + 1 > REPLAY_BUFFER:
            self.history.popleft()

    def _result(self, cid: int, res: ev.CommandResult) -> None:
        self._send_reliable(MsgType.COMMAND_RESULT, msg.encode_result(msg.ResultMsg(cid, res, self.now_ms())))

    def _send_reliable(self, type_: int, payload: bytes) -> None:
        fut = self.link.send(type_, payload)
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "exception never retrieved"

    def emit(self, evs: list[ev.DeviceEvent]) -> None:
        """Queue device events (stamped with device time) for reliable delivery, in order."""
        for e in evs:
            e = dataclasses.replace(e, device_time_ms=self.now_ms())
            if isinstance(e, ev.CardOut):
                self.card_times.append((e.shoe_seq, time.time()))
            self.event_no += 1
            type_, payload = msg.encode_numbered_event(self.event_no, e)
            self.history.append((self.event_no, type_, payload))
            self._send_numbered(self.event_no, type_, payload)
            if isinstance(e, ev.ShuffleStarted):
                token = self.model.shuffle_token
                h = asyncio.get_running_loop().call_later(self.sc.shuffle_s, self._finish_shuffle, token)
                self._timers.append(h)

    def _finish_shuffle(self, token: int) -> None:
        self.emit(self.model.finish_shuffle(token))

    def _draw(self, count: int) -> list[ev.DeviceEvent]:
        outcome = self.model.draw(count)
        for f in outcome.fired:
            if f.kind == "silence":
                self.spawn(self._after_send(lambda s=f.seconds: self.silence(s)))
            elif f.kind == "unplug":
                self.spawn(self._after_send(lambda s=f.seconds: self.spawn(self.unplug(s))))
        return outcome.events

    async def _after_send(self, action: Any) -> None:
        await asyncio.sleep(0.05)  # let the card's frame go out first: the fault hits while its ack is due
        action()

    def draw(self, count: int) -> int:
        """The dealer draws ``count`` cards (control op); returns how many came out."""
        before = self.model.drawn_total
        self.emit(self._draw(count))
        return self.model.drawn_total - before

    # ---- faults -----------------------------------------------------------------------------------------

    def silence(self, seconds: float) -> None:
        """Go mute (no bytes out, bytes in ignored) for ``seconds``: the host must declare the link down."""
        self._silent_until = time.monotonic() + seconds

    async def unplug(self, seconds: float) -> None:
        """Close the pty (the host sees a hang-up), wait, then open a new pty behind the same symlink."""
        if self._unplugged:
            return
        self._unplugged = True
        self._host_present = False
        self.link.pause_tx()
        self._close_pty()
        if self.link_path:
            with contextlib.suppress(OSError):
                os.unlink(self.link_path)
        log.info("emulator: unplugged for %.2f s", seconds)
        await asyncio.sleep(seconds)
        self._open_pty()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.sc.heartbeat_s)
            if self._master is None:
                continue
            heard = max(self._last_host_rx, self.link.last_valid_rx)  # any valid frame, acks included
            if self._host_present and time.monotonic() - heard > self.sc.silence_timeout_s:
                self._host_present = False
                self.link.pause_tx()  # keep the pending event; it goes again after the next HELLO
                log.info("emulator: host silent for %.1f s", self.sc.silence_timeout_s)
            # v2: the heartbeat says whether we hear the host; a host that still hears us but is not heard
            # says HELLO again at once (docs/protocol.md §6), so a one-sided link never stalls silently
            hb = msg.Heartbeat(hears_peer=self._host_present, last_rx_seq=self.link.last_rx_seq)
            self.link.send_unreliable(MsgType.HEARTBEAT, msg.encode_heartbeat(hb))

    def state(self) -> dict[str, Any]:
        s = self.model.state()
        s["host_present"] = self._host_present
        s["unplugged"] = self._unplugged
        s["silent"] = self._silent()
        s["pending_events"] = self.link.queued
        s["event_no"] = self.event_no
        s["acked_upto"] = self.acked_upto
        s["replays"] = self.replays
        s["replayed_events"] = self.replayed_events
        s["link"] = dataclasses.asdict(self.link.snapshot(self._host_present))
        return s
