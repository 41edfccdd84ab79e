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


# ---- through pyusb with a fake libusb backend (tests/support/fake_pyusb.py) ----


def test_pyusb_backend_finds_the_reader_by_serial_and_reports_an_unplug() -> None:
    from tests.support.fake_pyusb import FakeReaderUsb

    fake = FakeReaderUsb(0x1209, 0x0001, "R1")
    with pytest.raises(OSError, match="not found"):  # another reader of the same model: not ours
        PyUsbBackend(0x1209, 0x0001, "R2", backend=fake).open()
    usb = PyUsbBackend(0x1209, 0x0001, "R1", backend=fake)
    usb.open()
    assert fake.claimed and usb.read_report(5) is None  # a timeout is no report, not an error
    fake.push_event(ev.CardOut("Q", "H", 1))
    reader = UsbCardReader(FakeUsbBackend())
    reader.feed_report(usb.read_report(5) or b"")
    assert reader._events.get_nowait() == ev.CardOut("Q", "H", 1)
    fake.unplug()
    with pytest.raises(OSError, match="No such device"):
        usb.read_report(5)
    usb.close()
    assert not fake.claimed


def test_card_line_takes_cards_from_the_reader_and_is_up_only_with_both() -> None:
    from drivers.card_line import ShoeWithReader

    line = ShoeWithReader(object(), UsbCardReader(FakeUsbBackend()))
    assert line.translate("shoe", ev.LinkUp()) == []  # the reader is not up yet
    assert line.translate("reader", ev.LinkUp()) == [ev.LinkUp()]
    assert line.translate("shoe", ev.CardOut("A", "S", 1)) == []  # the shoe's own read: ignored, counted
    assert line.ignored_shoe_cards == 1
    assert line.translate("reader", ev.CardOut("A", "S", 1)) == [ev.CardOut("A", "S", 1)]
    assert line.translate("shoe", ev.Jammed(ev.JamLocation.OUTPUT)) == [ev.Jammed(ev.JamLocation.OUTPUT)]
    [err] = line.translate("reader", ev.DeviceError(7, "lens dirty"))
    assert err == ev.DeviceError(7, "card reader: lens dirty")
    [down] = line.translate("reader", ev.LinkDown(reason="unplugged"))
    assert down == ev.LinkDown(reason="card reader: unplugged")
    assert line.translate("shoe", ev.LinkUp()) == []  # the shoe reconnecting does not end the reader's outage
    assert line.translate("reader", ev.LinkUp()) == [ev.LinkUp()]


async def test_card_line_asked_again_drops_the_shoe_events_it_queued_after_the_point_issue14() -> None:
    """docs/protocol.md §5a through a card line: when the table asks the shoe again for the events after #5
    (its journal failed), the shoe's events #6 and #7 already forwarded into the card line's queue are dropped
    (the shoe sends them again; kept they would be committed before the one that failed, or twice); the
    reader's cards (not numbered) and the shoe's earlier events stay, in order."""
    import asyncio

    from drivers.card_line import ShoeWithReader

    class Shoe:
        def __init__(self) -> None:
            self.asked: list[tuple[int, int]] = []

        def resend_after(self, boot_id: int, event_no: int) -> bool:
            self.asked.append((boot_id, event_no))
            return True

        async def events(self):  # a part whose event stream fails
            raise OSError("port gone")
            yield

    line = ShoeWithReader(Shoe(), UsbCardReader(FakeUsbBackend()))
    queued = [
        ev.LidChanged(ev.LidState.CLOSED, event_no=5),
        ev.CardOut("A", "S", 1),  # the reader's
        ev.LidChanged(ev.LidState.OPEN, event_no=6),
        ev.CardOut("K", "D", 2),
        ev.ShuffleFinished(300, event_no=7),
    ]
    for e in queued:
        line._queue.put_nowait(e)
    assert line.resend_after(0xB00, 5) is True and line.shoe.asked == [(0xB00, 5)]
    assert line.drain_events(10) == [queued[0], queued[1], queued[3]]

    # a forwarding task that dies is reported (the service's watchdog names it: controller/service/table_service.py)
    line._tasks = [
        asyncio.get_running_loop().create_task(line._forward("shoe", line.shoe.events()), name="x")
    ]
    await asyncio.wait(line._tasks)
    assert line.dead_tasks() == ["x"]
