"""A table on a linked progressive, in the real service (docs/jackpot.md "Linked progressive (table side)"): real
table broker with the shipped ACL and the floor bridge rendered for `[jackpot] link`, a second real mosquitto as
the floor broker, the emulated shoe and jackpot sign on ptys, `tablectl run` as a subprocess. The test plays the
link's controller: it publishes signed meter documents (a test key) on the floor broker's
`casino/S1/progressive/bank-a/meter`, retained, every second; the bridge carries them to the table.

Shows: contributions published for the link; a hit reported without an amount, the prize the test's document
freezes verified and paid under the supervisors' actions (PT-2001 r.49); a hit at another table shown as "prize
pending at table T2" while this table plays on; forged documents (another key, a
replayed seq, and a publish straight on the table broker by the dealer's account) refused and never shown;
the documents stopping: within link_timeout_s linked chips refused, the sign says "progressive unavailable", the
main game deals on; the documents back: chips accepted again."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.client import Event
from controller.mqtt.floor_bridge import load, render
from tablebench import gpio_server
from tablebench.broker import Broker
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions
from tests.support.floor import FLOOR_USERS
from tests.support.link_docs import LINK, UNIT, LinkSigner, meter_doc
from tests.test_floor_bridge import write_configs
from tests.test_jackpot_service import Table, scenario

pytestmark = [
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto"),
    pytest.mark.timeout(180),
]

SUP, PIN = "alice", DEMO_PINS["alice"]
BET = 100  # firmware_configs/demo.toml [jackpot] bet_value
TIMEOUT_S = 6  # [jackpot] link_timeout_s (the smallest allowed), so the test waits little
METER = 2_000_000  # the link's meter, minor units (EUR 20,000.00)
FLOOR_TOPIC = f"casino/S1/progressive/{LINK}/meter"
USERS = {**FLOOR_USERS, "linkctl": "demo-linkctl"}


class LinkController:
    """The test's stand-in for the link's controller on the floor broker: signed, retained, QoS 1, seq rising,
    a heartbeat every second while ``beating``."""

    def __init__(self, floor: Broker, signer: LinkSigner) -> None:
        self.signer = signer
        self.seq = 0
        self.meter_units = METER * UNIT
        self.pending: list[dict[str, Any]] = []
        self.beating = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="linkctl", protocol=mqtt.MQTTv5)
        self.client.username_pw_set("linkctl", USERS["linkctl"])
        self.client.connect(floor.host, floor.port)
        self.client.loop_start()

    def doc(self) -> dict[str, Any]:
        self.seq += 1
        return meter_doc(self.seq, self.meter_units, members=["T1"], pending=list(self.pending))

    def publish(self, raw: bytes) -> None:
        self.client.publish(FLOOR_TOPIC, raw, qos=1, retain=True).wait_for_publish(5)

    def beat(self) -> bytes:
        raw = self.signer.sign(self.doc())
        self.publish(raw)
        return raw

    async def run(self) -> None:
        while True:
            if self.beating.is_set():
                await asyncio.to_thread(self.beat)
            await asyncio.sleep(1.0)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@contextlib.asynccontextmanager
async def linked_table(tmp_path: Path) -> AsyncIterator[tuple[Table, LinkController, list[dict[str, Any]]]]:
    floor = Broker.start(
        tmp_path / "floor", users=USERS, acl=False, site="S1"
    )  # the floor ACL: not this side
    signer = LinkSigner()
    ctl_link = LinkController(floor, signer)
    ctl_link.beating.set()
    ctl_link.beat()  # retained before the table comes up
    table_toml, bridge_toml = write_configs(tmp_path, [floor.port], insecure_no_tls=True)
    table_toml.write_text(table_toml.read_text() + f'[jackpot]\nenabled = true\nlink = "{LINK}"\n')
    section = tuple(render(load(table_toml, bridge_toml)).splitlines())
    assert f"topic meter in 1 casino/S1/table/T1/progressive/ {FLOOR_TOPIC.rsplit('/', 1)[0]}/" in section
    jackpot = {"link": LINK, "link_public_key": signer.public_hex, "link_timeout_s": TIMEOUT_S,
               "increment_bp": None, "reserve_bp": None, "seed": None, "correction_ceiling": None,
               "correction_max_change": None, "correction_confirm_s": None}  # fmt: skip
    stack = Stack(
        tmp_path / "stack",
        StackOptions(site="S1", table_id="T1", scenario=scenario(), broker_config=section,
                     config_overrides={"jackpot": jackpot}),
    )  # fmt: skip
    await asyncio.to_thread(stack.start)
    dealer, sup = stack.client("dealer"), stack.client("supervisor1")
    jackpot_events: list[dict[str, Any]] = []

    def keep(event: Event | None) -> None:
        if event is not None and event.topic == "events/jackpot":
            jackpot_events.append(event.data)

    dealer.on_change.append(keep)
    beats = asyncio.ensure_future(ctl_link.run())
    ctl: ControlClient | None = None
    try:
        await dealer.connect()
        await sup.connect()
        ctl = await ControlClient.connect(stack.shoe_control)
        t = Table(stack, dealer, sup, ctl)
        await t.until(lambda: dealer.view.status == "online", "service online", 30)
        yield t, ctl_link, jackpot_events
    finally:
        beats.cancel()
        with contextlib.suppress(BaseException):
            await beats
        if ctl is not None:
            await ctl.close()
        await dealer.close()
        await sup.close()
        await asyncio.to_thread(stack.stop)
        ctl_link.close()
        floor.stop()


def publish_as_dealer(stack: Stack, payload: bytes) -> list[int]:
    """The attack: the dealer's account publishes a meter document on the table broker; the PUBACK reason codes
    (0x87, not authorised: only the floor bridge writes progressive/ there, firmware_configs/mosquitto/acl)."""
    codes: list[int] = []
    done = threading.Event()

    def on_publish(_c: Any, _u: Any, _mid: int, reason: Any, _p: Any) -> None:
        codes.append(int(getattr(reason, "value", reason)))
        done.set()

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="attack-as-dealer", protocol=mqtt.MQTTv5)
    client.username_pw_set("dealer", stack.users["dealer"])
    client.on_publish = on_publish
    client.connect(stack.host, stack.port)
    client.loop_start()
    try:
        client.publish(f"{stack.prefix}/progressive/meter", payload, qos=1, retain=True)
        done.wait(10)
    finally:
        client.loop_stop()
        client.disconnect()
    return codes


def link_state(t: Table) -> dict[str, Any]:
    return t.state("jackpot").get("link") or {}


async def test_linked_table_contributes_pays_refuses_forgeries_and_plays_on_without_the_link(
    tmp_path: Path,
) -> None:
    async with linked_table(tmp_path) as (t, link, published):
        await t.until(lambda: t.state("jackpot").get("display_connected") is True, "sign connected")
        await t.load()
        await t.until(lambda: link_state(t).get("up") is True, "link up", 20)
        await t.shown("JACKPOT EUR 20,000.00")  # the link's meter, not a meter of the table's own
        assert t.state("jackpot")["meter"] is None and t.state("jackpot")["playable"] is True

        # Round 1: two linked chips, published for the link's controller (journaled first, as every event).
        for seat in (1, 3):
            await t.dealer.dealer("place_bet", seat=seat, amount=500)
            await t.chip(seat)
        await t.dealer.dealer("no_more_bets")
        await t.until(lambda: any(e["action"] == "contribution" for e in published), "contribution")
        (c,) = [e for e in published if e["action"] == "contribution"]
        assert (c["link"], c["seats"], c["chips"], c["bet_value"], c["amount_minor"]) == (LINK, [1, 3], 2, BET,
                                                                                          2 * BET)  # fmt: skip
        link.meter_units += 2 * BET * 7000  # the controller adds them; the sign follows its next document
        await t.shown("JACKPOT EUR 20,001.40")
        await t.finish_round()

        # Round 2: seat 1 is dealt two aces of different suits (PT-2001 r.43e): reported without an amount.
        for seat in (1, 3):
            await t.dealer.dealer("place_bet", seat=seat, amount=500)
        await t.chip(1)
        await t.dealer.dealer("no_more_bets")
        await t.draw("AH", "8D", "9S", "AS", "9D", "7D")
        await t.until(lambda: (t.state("round").get("turn") or {}).get("seat") == 1, "seat 1 to play")
        await t.dealer.dealer("stand")
        await t.until(lambda: any(e["action"] == "hit_pending" for e in published), "hit_pending")
        (hp,) = [e for e in published if e["action"] == "hit_pending"]
        assert (hp["link"], hp["seat"], hp["combination"]) == (LINK, 1, "TWO_ACES_MIXED")
        assert "amount" not in hp and "amount_minor" not in hp  # the controller freezes the prize
        # The controller orders and freezes it; its next signed document lists it for this table.
        link.pending = [link.signer.hit(9, "T1", hp["round_id"], 1, "TWO_ACES_MIXED", 25 * BET, 1)]
        await t.until(lambda: [h["hit_id"] for h in t.state("jackpot")["pending_hits"]] == [9], "prize in")
        await t.shown("WIN SEAT 1 EUR 25.00")
        await t.finish_round()
        await t.sup.supervisor(SUP, PIN, "jackpot_verify", hit_id=9)
        await t.sup.supervisor(SUP, PIN, "jackpot_pay", hit_id=9, amount=25 * BET)
        await t.until(lambda: any(e["action"] == "paid" for e in published), "paid")
        (paid,) = [e for e in published if e["action"] == "paid"]
        assert (paid["link"], paid["hit_id"], paid["amount_minor"], paid["by"]) == (LINK, 9, 25 * BET, SUP)
        link.pending = []
        await t.until(lambda: t.state("jackpot")["pending_hits"] == [], "paid and cleared")

        # Forgeries: another key, a replayed document, and a publish on the table broker by the dealer.
        forger = LinkSigner()
        link.publish(forger.sign(meter_doc(link.seq + 100, 9_999_999 * UNIT, members=["T1"])))
        link.publish(link.signer.sign(meter_doc(1, 8_888_888 * UNIT, members=["T1"])))  # seq 1 again
        acks = await asyncio.to_thread(
            publish_as_dealer,
            t.stack,
            link.signer.sign(meter_doc(link.seq + 200, 7_777_777 * UNIT, members=["T1"])),
        )
        assert acks and all(code >= 0x80 for code in acks), (
            f"the table broker took the dealer's publish: {acks}"
        )
        await t.until(
            lambda: (
                "bad_signature" in t.stack.controller_log(200) and "replayed" in t.stack.controller_log(200)
            ),
            "forged and replayed documents refused in the log",
        )
        await asyncio.sleep(
            2.5
        )  # two more heartbeats: long enough for a forgery to have shown, had it passed
        sign_log = (t.stack.workdir / "display.log").read_text(errors="replace")
        for forged in ("99,999.99", "88,888.88", "77,777.77"):
            assert forged not in sign_log, f"a forged meter reached the sign: {forged}"

        # The link's documents stop with a round in flight: its contribution was published (journaled) when its
        # chips were collected; the round settles; within link_timeout_s linked chips are refused.
        await t.dealer.dealer("place_bet", seat=1, amount=500)
        await t.chip(1)
        await t.dealer.dealer("no_more_bets")
        await t.until(lambda: sum(e["action"] == "contribution" for e in published) == 3, "in-flight chip")
        link.beating.clear()
        await t.until(lambda: link_state(t).get("up") is False, "link down", TIMEOUT_S + 5)
        assert "progressive unavailable" in t.state("jackpot")["reason"]
        assert t.state("jackpot")["playable"] is False
        await t.shown("PROGRESSIVE UNAVAILABLE")
        await t.finish_round()  # the round in flight settles
        before = len(published)
        await t.dealer.dealer("place_bet", seat=2, amount=500)
        for present in (False, True):
            await gpio_server.call(t.stack.gpio_socket, "set", name="chip_slot_2", value=present)
        await t.until(
            lambda: any(e["action"] == "chip_refused" and e["seat"] == 2 for e in published[before:]),
            "linked chip refused",
        )
        await t.dealer.dealer("no_more_bets")  # the main game goes on
        await t.until(lambda: t.state("table").get("state") == "dealing", "dealing without the link")
        await t.finish_round()
        assert not any(e["action"] == "contribution" for e in published[before:])
        await gpio_server.call(t.stack.gpio_socket, "set", name="chip_slot_2", value=False)

        # The documents resume: the link is up again and linked chips are accepted.
        link.meter_units += 1000 * 100 * UNIT  # grown meanwhile at the other tables
        link.beating.set()
        await t.until(lambda: link_state(t).get("up") is True, "link up again", 20)
        await t.shown("JACKPOT EUR 21,001.40")
        await t.dealer.dealer("place_bet", seat=3, amount=500)
        await t.chip(3)
        await t.dealer.dealer("no_more_bets")
        await t.until(
            lambda: (
                sum(e["action"] == "contribution" for e in published) == 4
            ),  # rounds 1, 2, in flight, this
            "contribution after the outage",
        )
        assert [e for e in published if e["action"] == "contribution"][-1]["seats"] == [3]

        # A hit at another table of the bank: the link is locked and reseeded, every sign says so; this table
        # plays on (its chips are still taken).
        link.meter_units = 1_000_000 * UNIT
        link.pending = [link.signer.hit(12, "T2", "r-x", 4, "FOUR_ACES_ONE_COLOUR", 2_100_140, 1)]
        await t.shown("PRIZE PENDING AT TABLE T2 EUR 10,000.00")
        assert t.state("jackpot")["playable"] is True and t.state("jackpot")["pending_hits"] == []
