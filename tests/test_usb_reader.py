"""USB card reader (docs/protocol.md §8) through the fake backend: reports -> card events, junk counted."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers import events as ev
from drivers.protocol.framing import encode_frame
from drivers.usb_reader import FakeUsbBackend, PyUsbBackend, UsbCardReader, reports_for

pytestmark = pytest.mark.timeout(30)


async def test_cards_delivered_once_in_order_and_duplicates_dropped() -> None:
    fake = FakeUsbBackend()
    reader = UsbCardReader(fake, poll_ms=1, reconnect_s=0.01)
    await reader.start()
    try:
        assert isinstance(await reader.next_event(5), ev.LinkUp)
        fake.push_event(ev.CardOut("A", "S", 1))
        fake.push_event(ev.CardOut("K", "D", 2), seq=1)
        fake.push_event(ev.CardOut("K", "D", 2), seq=1)  # repeated report
        fake.push_event(ev.CardUnreadable(3, damaged=True), seq=5)  # three events lost in between
        got = [await reader.next_event(5) for _ in range(3)]
        assert got == [ev.CardOut("A", "S", 1), ev.CardOut("K", "D", 2), ev.CardUnreadable(3, damaged=True)]
        assert reader.stats.duplicates == 1 and reader.stats.lost == 3
        fake.gone = True
        down = await reader.next_event(5)
        assert isinstance(down, ev.LinkDown) and "unplugged" in down.reason
        fake.gone = False
        assert isinstance(await reader.next_event(5), ev.LinkUp)
    finally:
        await reader.stop()


def test_bad_reports_and_unknown_types_are_counted() -> None:
    reader = UsbCardReader(FakeUsbBackend())
    reader.feed_report(b"")
    reader.feed_report(bytes([80]) + bytes(63))
    for r in reports_for(encode_frame(0, 0x10, b"\x00\x01")):  # a command type: not a reader event
        reader.feed_report(r)
    assert reader.stats.bad_reports == 2 and reader.stats.unknown_types == 1
    assert reader._events.empty()


@given(st.lists(st.binary(min_size=0, max_size=64), max_size=20))
def test_arbitrary_reports_never_crash(reports: list[bytes]) -> None:
    reader = UsbCardReader(FakeUsbBackend())
    for r in reports:
        reader.feed_report(r)
    while not reader._events.empty():
        assert isinstance(reader._events.get_nowait(), ev.CardOut | ev.CardUnreadable | ev.DeviceError)


def test_pyusb_backend_missing_device_is_a_clear_oserror() -> None:
    pytest.importorskip("usb.core")
    with pytest.raises(OSError, match=r"1209:fffe not found|no libusb backend"):
        PyUsbBackend(0x1209, 0xFFFE).open()
