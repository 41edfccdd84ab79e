"""The emulated shoe device: a pseudo-terminal speaking protocol v2 as the real shoe would.

It opens a pty, points a stable symlink at the slave, answers HELLO with IDENTIFY, heartbeats, sends every
event reliably (retransmitting until acked, across reconnects: nothing is lost while the host is away), keeps
the numbered events after their ack and sends again every one after the resume point each HELLO names
(docs/protocol.md §5a: nothing acknowledged is lost before the host committed it), and executes commands on
the ``ShoeModel``. Faults (line noise, silence, unplug, lost acks, raw bytes) are
injected here; the control socket (bench/tablebench/emulator/control.py) drives it at run time.

This module is the device's protocol side (frames, commands, heartbeats, faults in time); the pty is
pty_port.py, the line's noise and lost acks line_faults.py, the numbered events and their replay
numbered_events.py, the machine itself model.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections import deque
from typing import Any

from drivers import events as ev
from drivers.protocol import messages as msg
from drivers.protocol.framing import Frame
from drivers.protocol.messages import ErrorCode, MsgType
from tablebench.emulator.line_faults import LineNoise, LossyAckLink
from tablebench.emulator.model import Refused, ShoeModel
from tablebench.emulator.numbered_events import NumberedEvents
from tablebench.emulator.pty_port import PtyPort
from tablebench.emulator.scenario import Scenario

log = logging.getLogger(__name__)


class EmulatedShoe:
    def __init__(self, scenario: Scenario, *, link_path: str | None = None) -> None:
        self.sc = scenario
        self.model = ShoeModel(scenario)
        self.boot_id = random.getrandbits(32)
        self.link = LossyAckLink(
            name="emulator", ack_timeout=scenario.ack_timeout_s, max_retries=None, backoff_cap=1.0
        )
        self.port = PtyPort(self._received, link_path=link_path)
        self.noise = LineNoise(
            bit_error_rate=scenario.bit_error_rate,
            byte_error_rate=scenario.byte_error_rate,
            drop_rate=scenario.drop_rate,
            seed=scenario.seed + 1 if scenario.seed is not None else None,
        )
        self.events = NumberedEvents(self.link)
        self._host_session: int | None = None
        self._host_present = False
        self._last_host_rx = 0.0
        self._silent_until = 0.0
        self._unplugged = False
        self._started = time.monotonic()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timers: list[asyncio.TimerHandle] = []
        # (shoe_seq, wall-clock time) of each card as it leaves the shoe, for the benchmarks' latency figures
        # (control op ``card_times``); bounded so a long run never grows it.
        self.card_times: deque[tuple[int, float]] = deque(maxlen=100_000)

    @property
    def device_path(self) -> str | None:
        return self.port.device_path

    @property
    def link_path(self) -> str | None:
        return self.port.link_path

    # ---- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.link.attach(self._write)
        self.link.start()
        self._plug_in()
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
        self.port.close()
        self.port.remove_link()

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _plug_in(self) -> None:
        self.port.open()
        self._unplugged = False

    # ---- bytes in/out -----------------------------------------------------------------------------------

    def _silent(self) -> bool:
        return time.monotonic() < self._silent_until

    def _write(self, data: bytes) -> None:
        if not self.port.is_open or self._silent():
            return
        self.write_raw(self.noise.apply(data, to_device=False))

    def write_raw(self, data: bytes) -> None:
        """Bytes to the host as is (also used by the control op ``send_raw``)."""
        self.port.write(data)

    def _received(self, data: bytes) -> None:
        if self._silent():
            return
        for frame in self.link.feed(self.noise.apply(data, to_device=True)):
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
            self.events.replay(hello, self.boot_id)
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
            self.events.send(e)
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
        self.port.close()
        self.port.remove_link()
        log.info("emulator: unplugged for %.2f s", seconds)
        await asyncio.sleep(seconds)
        self._plug_in()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.sc.heartbeat_s)
            if not self.port.is_open:
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
        s["event_no"] = self.events.event_no
        s["acked_upto"] = self.events.acked_upto
        s["replays"] = self.events.replays
        s["replayed_events"] = self.events.replayed_events
        s["link"] = dataclasses.asdict(self.link.snapshot(self._host_present))
        return s
