"""Separate USB card reader (docs/protocol.md §8): card-read events in the shoe's vocabulary.

The reader is a HID-class-like device with one interrupt-IN endpoint (0x81) sending 64-byte reports:
byte 0 = number of valid bytes N (0..63), bytes 1..N = the next chunk of a byte stream framed exactly like the
serial link (frames may span reports). It sends CARD_OUT, CARD_UNREADABLE and DEVICE_ERROR frames and
HEARTBEAT once a second. There is no OUT endpoint, so nothing is acked: USB itself checks and retries each
transfer; SEQ increments per event, a repeated SEQ is dropped as a duplicate and a gap is counted as lost.

``UsbCardReader`` reads through a ``UsbBackend``: ``PyUsbBackend`` (pyusb) or ``FakeUsbBackend`` (tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from drivers import events as ev
from drivers.aio import cancel_tasks
from drivers.protocol import messages as msg
from drivers.protocol.framing import FrameDecoder, FramingStats, encode_frame
from drivers.protocol.messages import MsgType

log = logging.getLogger(__name__)

REPORT_SIZE = 64
EP_IN = 0x81
DEFAULT_VID = 0x1209  # pid.codes test range: placeholder until the maker's IDs are configured
DEFAULT_PID = 0x0001
_READER_EVENTS = {MsgType.CARD_OUT, MsgType.CARD_UNREADABLE, MsgType.DEVICE_ERROR}


class UsbBackend(Protocol):
    def open(self) -> None: ...
    def read_report(self, timeout_ms: int) -> bytes | None:
        """One report (up to 64 bytes) or None on timeout; raises OSError when the device is gone."""
        ...

    def close(self) -> None: ...


class PyUsbBackend:
    """Real reader through pyusb (libusb). Needs a udev rule granting access (systemd/ owns that)."""

    def __init__(
        self,
        vendor_id: int = DEFAULT_VID,
        product_id: int = DEFAULT_PID,
        serial: str | None = None,
        *,
        backend: Any = None,  # a pyusb ``usb.backend.IBackend``; None: pyusb's own choice (libusb1)
    ):
        self.vendor_id, self.product_id, self.serial = vendor_id, product_id, serial
        self.usb_backend = backend
        self._dev: Any = None

    def open(self) -> None:
        import usb.core  # lazy: unit tests and hosts without libusb never import it
        import usb.util

        kwargs: dict[str, Any] = {"idVendor": self.vendor_id, "idProduct": self.product_id}
        if self.serial:
            kwargs["serial_number"] = self.serial
        if self.usb_backend is not None:
            kwargs["backend"] = self.usb_backend
        try:
            dev = usb.core.find(**kwargs)
        except usb.core.NoBackendError as exc:
            raise OSError("USB card reader: no libusb backend installed (apt install libusb-1.0-0)") from exc
        except usb.core.USBError as exc:  # e.g. the serial string unreadable: unplugged while looking
            raise OSError(f"USB card reader: {exc}") from exc
        if dev is None:
            raise OSError(f"USB card reader {self.vendor_id:04x}:{self.product_id:04x} not found")
        with contextlib.suppress(NotImplementedError, usb.core.USBError):
            if dev.is_kernel_driver_active(0):
                dev.detach_kernel_driver(0)
        try:
            dev.set_configuration()
            usb.util.claim_interface(dev, 0)
        except usb.core.USBError as exc:
            usb.util.dispose_resources(dev)
            raise OSError(f"USB card reader: {exc}") from exc
        self._dev = dev

    def read_report(self, timeout_ms: int) -> bytes | None:
        import usb.core

        try:
            return bytes(self._dev.read(EP_IN, REPORT_SIZE, timeout=timeout_ms))
        except usb.core.USBTimeoutError:
            return None
        except usb.core.USBError as exc:
            raise OSError(f"USB card reader: {exc}") from exc

    def close(self) -> None:
        if self._dev is not None:
            import usb.util

            usb.util.dispose_resources(self._dev)
            self._dev = None


def reports_for(stream: bytes) -> list[bytes]:
    """Split a framed byte stream into 64-byte reports (what the reader firmware does)."""
    out = []
    for i in range(0, len(stream), REPORT_SIZE - 1):
        chunk = stream[i : i + REPORT_SIZE - 1]
        out.append((bytes([len(chunk)]) + chunk).ljust(REPORT_SIZE, b"\0"))
    return out


class FakeUsbBackend:
    """In-memory reader for tests: push events or raw reports; ``unplug()`` makes reads fail."""

    def __init__(self) -> None:
        self.reports: deque[bytes] = deque()
        self.opened = False
        self.gone = False
        self._seq = 0

    def push_event(self, e: ev.DeviceEvent, *, seq: int | None = None) -> None:
        type_, payload = msg.encode_event(e)
        if seq is None:
            seq, self._seq = self._seq, (self._seq + 1) & 0xFF
        self.reports.extend(reports_for(encode_frame(seq, type_, payload)))

    def push_report(self, report: bytes) -> None:
        self.reports.append(report)

    def open(self) -> None:
        if self.gone:
            raise OSError("fake reader unplugged")
        self.opened = True

    def read_report(self, timeout_ms: int) -> bytes | None:
        if self.gone:
            raise OSError("fake reader unplugged")
        return self.reports.popleft() if self.reports else None

    def close(self) -> None:
        self.opened = False


@dataclass(frozen=True, slots=True)
class ReaderStats:
    reports: int
    bad_reports: int
    duplicates: int
    lost: int
    unknown_types: int
    bad_payloads: int
    framing: dict[str, int]


class UsbCardReader:
    """Reads the reader in a worker thread and yields its card events exactly once, in order."""

    def __init__(self, backend: UsbBackend, *, poll_ms: int = 100, reconnect_s: float = 1.0) -> None:
        self.backend = backend
        self.poll_ms = poll_ms
        self.reconnect_s = reconnect_s
        self.decoder = FrameDecoder("usb-reader")
        self._events: asyncio.Queue[ev.DeviceEvent] = asyncio.Queue()
        self._last_seq: int | None = None
        self._task: asyncio.Task[None] | None = None
        self.connected = False
        self._n = {
            "reports": 0,
            "bad_reports": 0,
            "duplicates": 0,
            "lost": 0,
            "unknown_types": 0,
            "bad_payloads": 0,
        }

    @property
    def stats(self) -> ReaderStats:
        framing: FramingStats = self.decoder.stats
        return ReaderStats(**self._n, framing=framing.as_dict())

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="usb-reader")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_tasks([self._task])
            self._task = None
        self.backend.close()

    async def events(self) -> AsyncIterator[ev.DeviceEvent]:
        while True:
            yield await self._events.get()

    async def next_event(self, timeout: float | None = None) -> ev.DeviceEvent:
        return await asyncio.wait_for(self._events.get(), timeout)

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.backend.open)
            except OSError as exc:
                log.info("usb reader: %s", exc)
                await asyncio.sleep(self.reconnect_s)
                continue
            self.connected = True
            self.decoder.reset()
            self._events.put_nowait(ev.LinkUp())
            try:
                while True:
                    report = await asyncio.to_thread(self.backend.read_report, self.poll_ms)
                    if report is None:
                        await asyncio.sleep(0)
                        continue
                    self.feed_report(report)
            except OSError as exc:
                self.connected = False
                self.backend.close()
                self._events.put_nowait(ev.LinkDown(reason=str(exc)))
                await asyncio.sleep(self.reconnect_s)

    def feed_report(self, report: bytes) -> None:
        """Decode one report; bad reports and frames are counted, never delivered."""
        self._n["reports"] += 1
        if not report or report[0] > min(len(report) - 1, REPORT_SIZE - 1):
            self._n["bad_reports"] += 1
            log.warning("usb reader: bad report (length byte %s)", report[:1].hex())
            return
        for frame in self.decoder.feed(report[1 : 1 + report[0]]):
            if frame.type == MsgType.HEARTBEAT:
                continue
            if frame.type not in _READER_EVENTS:
                self._n["unknown_types"] += 1
                continue
            if frame.seq == self._last_seq:
                self._n["duplicates"] += 1
                continue
            if self._last_seq is not None and frame.seq != (self._last_seq + 1) & 0xFF:
                self._n["lost"] += (frame.seq - self._last_seq - 1) & 0xFF
            try:
                event = msg.decode_event(frame.type, frame.payload)
            except msg.DecodeError as exc:
                self._n["bad_payloads"] += 1
                log.warning("usb reader: %s", exc)
                continue
            self._last_seq = frame.seq
            self._events.put_nowait(event)
