"""A table whose card reader is a separate USB device (issue 16, docs/reader.md), with the whole service running
in this process (real mosquitto, the emulated shoe on a pty, the SQLite journal) and the reader reached through
pyusb with a fake libusb backend (tests/support/fake_pyusb.py): cards from the reader are attributed and
journaled, the shoe's own card reads are ignored, an unplugged reader is the link fault, nothing is lost."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from controller.config import load_config
from controller.service.table_service import TableService
from drivers import events as ev
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions
from tests.support.fake_pyusb import FakeReaderUsb

pytest.importorskip("usb.core")
pytestmark = pytest.mark.timeout(180)
WAIT = 30
VID, PID, SERIAL = 0x1209, 0x0001, "READER0001"


def _cards(stack: Stack) -> list[dict]:
    db = sqlite3.connect(stack.workdir / "state" / "journal.db")
    try:
        return [json.loads(r[0]) for r in db.execute("SELECT data FROM records WHERE kind = 'card'")]
    finally:
        db.close()


async def test_cards_from_the_usb_reader_are_dealt_and_an_unplug_is_the_link_fault(tmp_path) -> None:
    reader = {"enabled": True, "vendor_id": VID, "product_id": PID, "serial": SERIAL, "read_timeout_ms": 50}
    opts = StackOptions(
        jackpot=False,
        scenario={"kind": "continuous", "decks": 6, "seed": 7, "start_empty": True},
        config_overrides={"reader": reader},
    )
    stack = Stack(tmp_path / "stack", opts)
    stack.start_broker()
    stack.start_parts()
    usb = FakeReaderUsb(VID, PID, SERIAL)
    service = TableService(load_config(stack.config_path), usb_backend=usb)
    client, sup = stack.client("dealer"), stack.client("supervisor1")
    ctl = None
    try:
        await service.start()
        ctl = await ControlClient.connect(stack.shoe_control)
        await client.connect()
        await sup.connect()
        await client.wait_for(lambda v: v.status == "online" and {"table", "round"} <= set(v.states), WAIT)
        await asyncio.wait_for(_until(lambda: service.link_problems() == []), WAIT)  # shoe and reader up
        assert usb.claimed  # pyusb found it by vendor, product and serial, configured it and claimed it

        # Open and load (PT-2001 r.53-54), with the configuration's profile and shoe
        await sup.supervisor("alice", DEMO_PINS["alice"], "open_table")
        await client.wait_for(lambda v: v.states.get("lid", {}).get("state") == "open", WAIT)
        await ctl.insert(156)
        await ctl.insert(156)
        await ctl.close_lid()
        await client.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)

        # The shoe deals a card with its own reader: ignored, the separate reader is the one that counts
        await client.dealer("place_bet", seat=1, amount=1000)
        await client.dealer("no_more_bets")
        await ctl.draw(1)
        await asyncio.wait_for(_until(lambda: service.shoe.ignored_shoe_cards >= 1), WAIT)
        assert _cards(stack) == []

        # Cards read by the USB reader: attributed and journaled, in order, none lost
        sent = [
            ("9", "S"),
            ("5", "H"),
            ("7", "C"),
            ("K", "D"),
        ]  # burned (PT-2001 r.10), seat 1, dealer, seat 1
        for no, (rank, suit) in enumerate(sent, start=1):
            usb.push_event(ev.CardOut(rank, suit, no))
        await asyncio.wait_for(_until(lambda: len(_cards(stack)) >= len(sent)), WAIT)
        journaled = _cards(stack)
        assert [(c["card"], c["shoe_seq"]) for c in journaled] == [
            (r + s, n) for n, (r, s) in enumerate(sent, 1)
        ]
        # the journal has every card already; the published round state may lag: wait for seat 1's second card
        await client.wait_for(
            lambda v: (
                len((v.states["round"].get("seats", [{}])[0].get("hands") or [{}])[0].get("cards", [])) >= 2
            ),
            WAIT,
        )
        seat = client.view.states["round"]["seats"][0]
        assert seat["seat"] == 1 and seat["hands"][0]["cards"] == ["5H", "KD"]
        assert client.view.states["round"]["dealer"]["cards"][0] == "7C"
        assert journaled[0].get("recipient") == "burn", journaled[0]
        assert service.reader is not None and service.reader.stats.lost == 0

        # Unplugged: the link fault (lid locked, dealing refused, PT-2001 r.51), the reason names the reader
        usb.unplug()
        await client.wait_for(lambda v: "link_down" in v.states["table"].get("faults", []), WAIT)
        assert "card reader down" in service.link_problems()
        await client.wait_for(
            lambda v: any(a["kind"] == "link_down" and "card reader" in json.dumps(a) for a in v.alerts_open),
            WAIT,
        )
        usb.plug()
        await asyncio.wait_for(
            _until(lambda: service.link_problems() == []), WAIT
        )  # back: a supervisor clears
    finally:
        for c in (client, sup):
            await c.close()
        if ctl is not None:
            await ctl.close()
        await service.stop()
        stack.stop()


async def _until(cond, period: float = 0.02) -> None:
    while not cond():
        await asyncio.sleep(period)
