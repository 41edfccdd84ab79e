"""Driver <-> emulator through a real pty (os.openpty): exactly-once, in-order delivery under faults."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from support.pty_shoe import shoe_on_pty

from drivers import events as ev
from drivers.link import LinkError
from drivers.protocol.framing import encode_frame
from tablebench.emulator.scenario import ALL_CODES

pytestmark = pytest.mark.timeout(60)


async def cards(driver, n: int, timeout: float = 20.0) -> tuple[list[ev.CardOut], list[ev.DeviceEvent]]:
    """The next ``n`` CardOut events, plus every other event seen meanwhile."""
    got: list[ev.CardOut] = []
    other: list[ev.DeviceEvent] = []
    while len(got) < n:
        e = await driver.next_event(timeout)
        (got if isinstance(e, ev.CardOut) else other).append(e)
    return got, other


def scripted(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(ALL_CODES) for _ in range(n)]


async def test_every_card_once_and_in_order(tmp_path: Path) -> None:
    order = scripted(60)
    async with shoe_on_pty({"order": order}, tmp_path) as (driver, ctl):
        for _ in range(6):
            await ctl.draw(10)
        got, other = await cards(driver, 60)
        assert [c.code for c in got] == order
        assert [c.shoe_seq for c in got] == list(range(1, 61))
        assert other == []
        await asyncio.sleep(0.2)
        assert driver._events.empty()  # nothing delivered twice
        assert driver.stats.duplicates == 0 and driver.stats.crc_errors == 0


async def test_bit_error_rate_1e3_no_corrupt_card_and_all_arrive(tmp_path: Path) -> None:
    """Line noise both ways at BER 1e-3: CRC errors happen, yet every card arrives once, correct, in order."""
    order = scripted(80, seed=7)
    sc = {"order": order, "seed": 3, "errors": {"bit_error_rate": 1e-3}}
    async with shoe_on_pty(sc, tmp_path, max_retries=20) as (driver, ctl):
        for _ in range(8):
            await ctl.draw(10)
        got: list[ev.CardOut] = []
        while len(got) < 80:
            e = await driver.next_event(30)
            if isinstance(e, ev.CardOut):
                got.append(e)
            else:  # the only other thing noise may cause is a link bounce
                assert isinstance(e, ev.LinkDown | ev.LinkUp | ev.Identified), e
        assert [c.code for c in got] == order
        assert [c.shoe_seq for c in got] == list(range(1, 81))
        s, dev = driver.stats, (await ctl.state())["link"]
        assert s.crc_errors + s.bad_frames + dev["crc_errors"] + dev["bad_frames"] > 0  # noise really hit
        assert dev["retransmits"] > 0


async def test_duplicate_event_suppressed_after_lost_ack(tmp_path: Path) -> None:
    async with shoe_on_pty({"order": ["AS", "KD", "QH"]}, tmp_path) as (driver, ctl):
        await ctl.lose_acks(2)  # the device ignores the next two acks: it sends AS three times
        await ctl.draw(3)
        got, other = await cards(driver, 3)
        assert [c.code for c in got] == ["AS", "KD", "QH"] and other == []
        assert driver.stats.duplicates == 2
        assert (await ctl.state())["link"]["retransmits"] >= 2
        await asyncio.sleep(0.2)
        assert driver._events.empty()


async def test_reconnect_after_unplug_delivers_pending_card_once(tmp_path: Path) -> None:
    """Unplug right after card 3 (its ack may be lost): LinkDown, LinkUp, and card 3 exactly once."""
    order = scripted(6, seed=5)
    sc = {"order": order, "faults": [{"at_card": 3, "kind": "unplug", "seconds": 0.3}]}
    async with shoe_on_pty(sc, tmp_path) as (driver, ctl):
        await ctl.draw(3)
        seen: list[ev.DeviceEvent] = []
        while not any(isinstance(e, ev.LinkUp) for e in seen):
            seen.append(await driver.next_event(10))
        await ctl.draw(3)
        got, _ = await cards(driver, 6 - sum(isinstance(e, ev.CardOut) for e in seen))
        all_cards = [e for e in seen if isinstance(e, ev.CardOut)] + got
        assert [c.code for c in all_cards] == order
        kinds = [type(e).__name__ for e in seen if not isinstance(e, ev.CardOut)]
        assert kinds == ["LinkDown", "Identified", "LinkUp"]
        assert "unplugged" in next(e for e in seen if isinstance(e, ev.LinkDown)).reason
        assert driver.connected and driver.stats.link_downs == 1 and driver.stats.connects == 2


async def test_silence_declares_link_down_then_recovers(tmp_path: Path) -> None:
    async with shoe_on_pty({"order": ["2C", "3C"]}, tmp_path) as (driver, ctl):
        await ctl.silence(1.6)
        down = await driver.next_event(10)
        assert isinstance(down, ev.LinkDown) and "silence" in down.reason
        with pytest.raises(LinkError):
            await driver.command(ev.ReportCounts())
        assert isinstance(await driver.next_event(10), ev.Identified)
        assert isinstance(await driver.next_event(10), ev.LinkUp)
        await ctl.draw(2)
        got, _ = await cards(driver, 2)
        assert [c.code for c in got] == ["2C", "3C"]


async def test_garbage_oversized_unknown_and_bad_payload_are_counted(tmp_path: Path) -> None:
    async with shoe_on_pty({"order": ["9S"]}, tmp_path) as (driver, ctl):
        await ctl.send_raw(b"\x00\xffjunk\x13\x37")  # garbage before any flag
        await ctl.send_raw(b"\x7e" + b"\x01" * 700 + b"\x7e")  # oversized
        await ctl.send_raw(encode_frame(200, 0x6F, b"future"))  # unknown (acknowledged) type
        await ctl.send_raw(encode_frame(201, 0x40, b"\x00\x00\x00\x00\x00\x01\x63\x00\x00\x64"))  # rank 99
        bad = bytearray(encode_frame(202, 0x40, b"\x00" * 10))
        bad[-2] ^= 0x55
        await ctl.send_raw(bytes(bad))  # bad CRC
        await ctl.draw(1)
        got, other = await cards(driver, 1)
        assert got[0].code == "9S" and other == []  # nothing from the junk
        s = driver.stats
        assert s.oversized == 1 and s.unknown_types == 1 and s.crc_errors == 1
        assert s.bad_frames == 2  # the junk between frames, and the card with rank index 99
        assert driver.connected


async def test_command_results_and_refusals(tmp_path: Path) -> None:
    """PT-2001 r.60: the lid opens automatically and never while shuffling; closing starts the shuffle."""
    async with shoe_on_pty({}, tmp_path) as (driver, ctl):
        assert (await driver.command(ev.ReportCounts())).ok
        counts = await driver.next_event(5)
        assert isinstance(counts, ev.CardsInside) and counts.count == 6 * 52
        res = await driver.command(ev.OpenLid())
        assert res.ok
        assert (await driver.next_event(5)).state == ev.LidState.OPEN  # type: ignore[attr-defined]
        await ctl.close_lid()
        evs = [await driver.next_event(5) for _ in range(4)]
        assert [type(e).__name__ for e in evs] == [
            "LidChanged",
            "ShuffleStarted",
            "LidChanged",
            "ShuffleFinished",
        ]
        assert evs[0].state == ev.LidState.CLOSED and evs[2].state == ev.LidState.LOCKED
        await driver.command(ev.StartShuffle())
        assert isinstance(await driver.next_event(5), ev.ShuffleStarted)
        res = await driver.command(ev.OpenLid())
        if not res.ok:  # the shuffle may already be over on a slow machine; then the lid opened
            assert res.error_code == 0x11 and "shuffling" in res.text


async def test_link_error_when_down(tmp_path: Path) -> None:
    async with shoe_on_pty({}, tmp_path) as (driver, ctl):
        await ctl.unplug(5)
        assert isinstance(await driver.next_event(10), ev.LinkDown)
        assert not driver.connected
        with pytest.raises(LinkError, match="down"):
            await driver.command(ev.OpenLid())


async def test_fake_shoe_and_driver_satisfy_shoe_device() -> None:
    from drivers.shoe import ShoeDevice, ShoeDriver
    from tablebench.fake_shoe import FakeShoe

    fake = FakeShoe()
    assert isinstance(fake, ShoeDevice) and isinstance(ShoeDriver("/nonexistent"), ShoeDevice)
    await fake.start()
    assert isinstance(await fake.next_event(1), ev.Identified)
    assert isinstance(await fake.next_event(1), ev.LinkUp)
    fake.results[ev.OpenLid] = ev.CommandResult(False, 0x11, "shuffling")
    assert (await fake.command(ev.OpenLid())).error_code == 0x11 and fake.commands == [ev.OpenLid()]
    fake.link_down()
    with pytest.raises(LinkError):
        await fake.command(ev.ReportCounts())


async def test_resend_after_on_a_live_link_delivers_the_uncommitted_events_again(tmp_path: Path) -> None:
    """docs/protocol.md §5a: the table could not commit the events after #1 (its journal failed); once it can,
    the driver says HELLO again on the live link with #1 as the resume point and the shoe sends #2 and #3 again
    (only ever backwards within the boot: a point not older than what was delivered asks for nothing)."""
    async with shoe_on_pty({"order": ["AS", "KD", "5H"]}, tmp_path) as (driver, ctl):
        await ctl.draw(3)
        first = [await driver.next_event(5) for _ in range(3)]
        assert [e.code for e in first] == ["AS", "KD", "5H"]
        boot, delivered = driver.resume_point
        assert delivered == first[-1].event_no
        assert not driver.resend_after(boot, delivered)  # nothing newer than delivered: no HELLO
        assert not driver.resend_after(boot ^ 1, 0)  # another boot's point: refused
        assert driver.resend_after(boot, first[0].event_no)
        again = [await driver.next_event(5) for _ in range(2)]
        assert [(e.code, e.event_no) for e in again] == [(e.code, e.event_no) for e in first[1:]]
        assert driver.connected and driver.resume_point == (boot, delivered)
        with pytest.raises(TimeoutError):
            await driver.next_event(0.5)  # nothing else: no duplicate beyond what was asked for
