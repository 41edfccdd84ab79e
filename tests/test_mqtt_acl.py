"""The broker's side of the command defences, against a real mosquitto rendered for one site (issue 13 §3):
who may read command topics and responses, the site level of every ACL rule, the packet size limit, and the
controller's rate limits under a flood of junk commands."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from support.broker import USERS, Recorder, link_config

from controller.broker import render_acl
from controller.journal.store import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, CredentialStore, NonceStore
from controller.mqtt.commands import CommandIntake, CommandRequest
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.signed_command import build_command
from controller.mqtt.userkeys import public_key_hex
from controller.topics import Topics
from tablebench.broker import Broker

SITE = "lisbon"
ALICE = Ed25519PrivateKey.generate()
CREDS = CredentialStore.from_dict(
    {"users": {"alice": {"roles": ["supervisor"], "public_key": public_key_hex(ALICE)}}}
)


@pytest.fixture(scope="module")
def site_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = Broker.start(tmp_path_factory.mktemp("site-broker"), users=USERS, site=SITE)
    try:
        yield broker
    finally:
        broker.stop()


class Controller:
    """The table's MQTT side for one test: link + outbox publisher + command intake over a real journal."""

    def __init__(self, broker: Broker, db: Path, table: str = "T1") -> None:
        self.topics = Topics(SITE, table)
        self.journal = Journal(db, table_id=table)
        self.calls: list[CommandRequest] = []
        self.link = MqttLink(link_config(broker, f"table-{table}", reconnect_min_s=0.05), self.topics)
        self.intake = CommandIntake(
            handler=self._handle,
            auth=Authenticator(CREDS, NonceStore(self.journal), site=SITE, table=table),
            alerts=AlertManager(self.journal),
            link=self.link,
        )

    async def _handle(self, req: CommandRequest) -> dict[str, Any]:
        self.calls.append(req)
        return {"done": req.action}

    async def __aenter__(self) -> Controller:
        OutboxPublisher(self.journal, self.link).start()
        self.intake.start()
        await self.link.start()
        await self.link.wait_connected()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.intake.stop()
        await self.link.stop()
        self.journal.close()


def reply_props(topics: Topics, role: str, account: str) -> Properties:
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topics.abs(f"cmd/{role}/response/{account}")
    props.CorrelationData = b"c"
    return props


def signed(**kw: Any) -> str:
    return json.dumps(
        build_command(
            "alice", "", "supervisor", "clear_jam", {}, site=SITE, table="T1", private_key=ALICE, **kw
        )
    )


def test_rendered_acl_names_the_site_and_no_wildcard_site() -> None:
    acl = render_acl(list(USERS), site=SITE)
    rules = [line.split()[-1] for line in acl.splitlines() if line.startswith("topic ")]
    assert rules and all(r.startswith(f"casino/{SITE}/table/") for r in rules)
    blocks = [b.splitlines() for b in acl.split("\nuser ")[1:]]
    readers = {
        b[0] for b in blocks if any(x.startswith("topic read") and x.endswith("/cmd/supervisor") for x in b)
    }
    assert readers == {"table-T1", "table-T2"}  # only the controllers read a command topic


async def test_only_the_controller_reads_commands_and_each_sender_only_its_own_answers(
    site_broker: Broker, tmp_path: Path
) -> None:
    """Attack: dealer, monitor, technician and another supervisor account subscribe to everything of the
    table (they could read cmd/supervisor: a sniffed signed command); they see no command and no answer
    addressed to another account. A supervisor naming another account's response topic gets no answer."""
    async with Controller(site_broker, tmp_path / "j.db") as ctl:
        topics = ctl.topics
        spies = {
            u: Recorder(site_broker, u, topics, filters=("#",), validate=False).start()
            for u in ("dealer", "monitor", "technician", "supervisor2", "archive")
        }
        sup = Recorder(site_broker, "supervisor1", topics, filters=("#",), validate=False).start()
        await asyncio.sleep(0.1)
        assert (
            sup.publish(
                "cmd/supervisor",
                signed(request_id="a1"),
                props=reply_props(topics, "supervisor", "supervisor1"),
            )
            == 0
        )
        await sup.await_for(lambda m: any(t == "cmd/supervisor/response/supervisor1" for t, _, _ in m))
        # supervisor2 asks, naming supervisor1's response topic: the answer goes where it cannot read
        s2 = spies["supervisor2"]
        s2.publish(
            "cmd/supervisor", signed(request_id="a2"), props=reply_props(topics, "supervisor", "supervisor1")
        )
        await sup.await_for(lambda m: len(sup.on("cmd/supervisor/response/supervisor1")) == 2)
        # the dealer's own answer reaches the dealer only
        dealer = spies["dealer"]
        stand = '{"request_id":"d1","action":"stand","args":{}}'
        dealer.publish("cmd/dealer", stand, props=reply_props(topics, "dealer", "dealer"))
        await dealer.await_for(lambda m: any(t == "cmd/dealer/response/dealer" for t, _, _ in m))
        await asyncio.sleep(0.3)  # anything else in flight arrives
        for user, spy in spies.items():
            seen = sorted({t for t, _, _ in spy.messages if t.startswith("cmd/")})
            own = {"dealer": ["cmd/dealer/response/dealer"]}.get(user, [])
            assert seen == own, (user, seen)
        assert not any(t == "cmd/supervisor" for t, _, _ in sup.messages)  # not even the sender's own command
        assert [c.request_id for c in ctl.calls] == ["a1", "a2", "d1"]
        for r in (*spies.values(), sup):
            r.stop()


def test_every_rule_is_confined_to_the_tables_own_site(site_broker: Broker) -> None:
    """Attack: the controller's account (or a supervisor's) publishing under another site of the floor: the ACL
    used to allow any site (casino/+/...)."""
    other = Topics("porto", "T1")
    table = Recorder(site_broker, "table-T1", other, filters=()).start()
    sup = Recorder(site_broker, "supervisor1", other, filters=()).start()
    assert table.publish("status", b"online") == 0x87
    assert table.publish("events/card", b"{}") == 0x87
    assert sup.publish("cmd/supervisor", signed()) == 0x87
    own = Recorder(site_broker, "table-T1", Topics(SITE, "T1"), filters=()).start()
    assert own.publish("status", b"online") < 0x80
    for r in (table, sup, own):
        r.stop()


async def test_broker_refuses_an_oversize_packet(site_broker: Broker, tmp_path: Path) -> None:
    """Attack: one 100 MiB message took the controller to 455 MB. The broker now refuses packets over 128 KiB
    (max_packet_size) and disconnects the sender; nothing reaches the controller."""
    async with Controller(site_broker, tmp_path / "j.db") as ctl:
        dealer = Recorder(site_broker, "dealer", ctl.topics, filters=()).start()
        gone = asyncio.Event()
        loop = asyncio.get_running_loop()
        dealer.client.on_disconnect = lambda *a: loop.call_soon_threadsafe(gone.set)
        big = b'{"request_id":"big","action":"stand","args":{},"user":"' + b"x" * (1024 * 1024) + b'"}'
        dealer.client.publish(ctl.topics.abs("cmd/dealer"), big, qos=1)
        await asyncio.wait_for(gone.wait(), 10)
        ok = Recorder(site_broker, "monitor", ctl.topics, filters=()).start()  # the broker is still up
        ok.stop()
        assert ctl.intake.counters.received == 0 and ctl.calls == []
        dealer.client.loop_stop()


async def test_a_flood_of_junk_does_not_starve_a_real_command_nor_grow_the_journal_per_message(
    site_broker: Broker, tmp_path: Path
) -> None:
    """Attack: 2,000 junk commands in a few seconds starved real ones and added a journal row each. Now: a real
    supervisor command sent after 2,000 forged ones from another supervisor account is answered within 10 s,
    and the journal grows by aggregate records (drops counted per source), not by a row per junk message."""
    async with Controller(site_broker, tmp_path / "j.db") as ctl:
        topics = ctl.topics
        before = ctl.journal.last_seq
        flood = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="flood", protocol=mqtt.MQTTv5)
        flood.username_pw_set("supervisor2", USERS["supervisor2"])
        flood.connect(site_broker.host, site_broker.port)
        flood.loop_start()
        forged = Ed25519PrivateKey.generate()
        props = reply_props(topics, "supervisor", "supervisor2")
        t_flood = time.monotonic()
        for i in range(2000):
            junk = json.dumps(
                build_command(
                    "mallory",
                    "",
                    "supervisor",
                    "clear_jam",
                    {},
                    site=SITE,
                    table="T1",
                    private_key=forged,
                    request_id=f"j{i}",
                )
            )
            flood.publish(topics.abs("cmd/supervisor"), junk, qos=1, properties=props)
        sup = Recorder(site_broker, "supervisor1", topics, filters=("cmd/supervisor/response/#",)).start()
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        sup.publish(
            "cmd/supervisor",
            signed(request_id="real"),
            props=reply_props(topics, "supervisor", "supervisor1"),
        )
        await sup.await_for(
            lambda m: any(json.loads(p).get("request_id") == "real" for t, p, _ in m), timeout=10
        )
        answered_in = time.monotonic() - t0
        answer = next(d for d in sup.on("cmd/supervisor/response/supervisor1") if d["request_id"] == "real")
        assert answer["ok"] is True and answered_in < 10
        # every junk message was either refused (journaled) or dropped (counted): wait until all are accounted for
        deadline = time.monotonic() + 30
        c = ctl.intake.counters
        while c.unauthorised + c.dropped < 2000 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert c.unauthorised + c.dropped == 2000 and c.dropped > 0
        took = time.monotonic() - t_flood  # the flood lasted at most this long at the controller
        limits = ctl.intake.limits
        assert c.unauthorised <= limits.source_burst + limits.source_rate * took + 2  # the limiter held
        ctl.intake.flush_drops()
        rows = list(ctl.journal.records(after_seq=before))
        dropped = [r.data for r in rows if r.kind == "command_dropped"]
        assert sum(d["count"] for d in dropped) == c.dropped
        assert len(dropped) <= took + 3  # one aggregate per source per second, not one row per message
        assert len([r for r in rows if r.kind == "command_refused"]) == c.unauthorised
        # each admitted refusal: its record and its aggregated alert(s) (rejected; lockout once locked out); the
        # drops: their aggregates; the real command: its own few. Each transaction that publishes also ends with
        # one `published` record (the chain covers every outbox row, docs/security.md), hence 4 per refusal.
        assert len(rows) <= 4 * c.unauthorised + 3 * len(dropped) + 10 < 2000, (len(rows), took)
        flood.loop_stop()
        flood.disconnect()
        sup.stop()


async def test_a_command_signed_for_one_table_is_refused_at_another(
    site_broker: Broker, tmp_path: Path
) -> None:
    """Issue 37: alice signs ``ack_alert`` for T1; T1 accepts it. The same bytes, re-sent within the time window by
    another account that may publish supervisor commands (as the floor host's relay account could) to T2, where
    her key is enrolled too, were accepted and T2's alert recorded as acknowledged by alice. The table is in the
    signed bytes now: T2 refuses it and says why; a command signed in the old form (no site and table) is refused
    with the reason; neither reaches T2's handler, and each refusal is journaled."""
    async with (
        Controller(site_broker, tmp_path / "t1.db", "T1") as t1,
        Controller(site_broker, tmp_path / "t2.db", "T2") as t2,
    ):
        cmd = build_command("alice", "", "supervisor", "ack_alert", {"alert_id": 4}, site=SITE, table="T1",
                            private_key=ALICE)  # fmt: skip
        sup = Recorder(site_broker, "supervisor1", t1.topics, filters=("cmd/supervisor/response/#",)).start()
        relay = Recorder(
            site_broker, "supervisor2", t2.topics, filters=("cmd/supervisor/response/#",)
        ).start()
        try:
            await asyncio.sleep(0.1)
            sup.publish(
                "cmd/supervisor", json.dumps(cmd), props=reply_props(t1.topics, "supervisor", "supervisor1")
            )
            await sup.await_for(lambda m: bool(sup.on("cmd/supervisor/response/supervisor1")))
            assert sup.on("cmd/supervisor/response/supervisor1")[0]["ok"] is True
            resent = json.dumps({**cmd, "request_id": "again"})  # the same signature, another request id
            relay.publish("cmd/supervisor", resent, props=reply_props(t2.topics, "supervisor", "supervisor2"))
            old = {k: v for k, v in cmd.items() if k not in ("site", "table")}
            old |= {"request_id": "old", "nonce": "ab" * 16}
            unsigned = {k: old[k] for k in ("action", "args", "nonce", "role", "ts", "user")}
            old["sig"] = ALICE.sign(
                json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()
            ).hex()
            relay.publish(
                "cmd/supervisor", json.dumps(old), props=reply_props(t2.topics, "supervisor", "supervisor2")
            )
            await relay.await_for(lambda m: len(relay.on("cmd/supervisor/response/supervisor2")) == 2)
            answers = {a["request_id"]: a for a in relay.on("cmd/supervisor/response/supervisor2")}
        finally:
            sup.stop()
            relay.stop()
        assert answers["again"] == {"request_id": "again", "ok": False,
                                    "reason": f"signed for table {SITE}/T1, this is {SITE}/T2"}  # fmt: skip
        assert answers["old"]["ok"] is False
        assert answers["old"]["reason"].startswith("signed without the site and table it is for")
        assert [c.request_id for c in t1.calls] == [cmd["request_id"]] and t2.calls == []
        with t2.journal.transaction() as tx:
            codes = [json.loads(d)["code"] for (d,) in tx.execute(
                "SELECT data FROM records WHERE kind = 'command_refused' ORDER BY seq")]  # fmt: skip
        assert codes == ["wrong_table", "malformed"]
