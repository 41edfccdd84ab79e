"""Event re-fetch over ``cmd/replay`` against a real mosquitto (the event re-fetch, issue 14 item 5): kept events come
back byte-identical in id order with a closing document naming what is missing; hostile requests get an answer
and a journal row; a flood is rate-limited; a kept row edited in the file is never sent."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from support.broker import Recorder, link_config, new_topics

from controller.journal.store import Journal
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.replay import MAX_RANGE, RATE_PER_KEY, ReplayServer
from controller.topics import Topics, event_topic
from tablebench.broker import Broker


def emit(journal: Journal, i: int) -> None:
    with journal.transaction() as tx:
        tx.append("card", {"i": i})
        tx.publish(
            event_topic("card"),
            "card",
            {"code": "7H", "rank": "7", "suit": "H", "shoe_seq": i, "face_up": True, "recipient": "seat:1:0"}
            | {"counts": True},
        )


class Requester:
    """The ``monitor`` account asking for events, its answers on cmd/replay/response/monitor."""

    def __init__(self, broker: Broker, topics: Topics) -> None:
        self.topics = topics
        self.rec = Recorder(broker, "monitor", topics, filters=("cmd/replay/response/#", "events/#")).start()

    def ask(self, payload: bytes | str, *, user: str = "monitor", response: bool = True) -> None:
        props = Properties(PacketTypes.PUBLISH)
        if response:
            props.ResponseTopic = self.topics.abs(f"cmd/replay/response/{user}")
        assert self.rec.publish("cmd/replay", payload, props=props) == 0

    def answers(self) -> list[dict]:
        return [json.loads(p) for p in self.raw_answers()]

    def raw_answers(self) -> list[bytes]:
        """The closing documents on the answer address, the events under it by their own topic, in order."""
        return [p for _t, p in self.topical_answers()]

    def topical_answers(self) -> list[tuple[str, bytes]]:
        base = "cmd/replay/response/monitor"
        return [(t, p) for t, p, _ in self.rec.messages if t == base or t.startswith(base + "/")]

    async def closing(self, n: int, timeout: float = 20) -> list[dict]:
        await self.rec.await_for(
            lambda m: len([a for a in self.answers() if "request_id" in a]) >= n, timeout
        )
        return [a for a in self.answers() if "request_id" in a]


async def table(broker: Broker, db: Path, topics: Topics, events: int):
    journal = Journal(db, table_id=topics.table_id)
    link = MqttLink(link_config(broker, reconnect_min_s=0.05, reconnect_max_s=0.5), topics)
    pub = OutboxPublisher(journal, link)
    pub.start()
    server = ReplayServer(journal, link)
    forged: list[int] = []
    server.on_forged = lambda event_id, reason: forged.append(event_id)
    server.start()
    await link.start()
    await link.wait_connected()
    for i in range(1, events + 1):
        emit(journal, i)
    async with asyncio.timeout(20):
        while journal.outbox_size():  # published and acknowledged: gone from the outbox, kept for re-fetch
            await asyncio.sleep(0.02)
    return journal, link, server, forged


async def test_kept_events_come_back_byte_identical_in_order_with_missing_named(
    mqtt_broker: Broker, tmp_path: Path
) -> None:
    topics = new_topics()
    req = Requester(mqtt_broker, topics)
    _journal, link, server, _ = await table(mqtt_broker, tmp_path / "j.db", topics, 30)
    await req.rec.await_for(lambda m: len(req.rec.event_ids()) >= 30)
    live = {json.loads(p)["event_id"]: p for t, p, _ in req.rec.messages if t.startswith("events/")}
    req.ask(json.dumps({"request_id": "gap-1", "from_event_id": 20, "to_event_id": 35}))
    (closing,) = await req.closing(1)
    assert closing == {
        "request_id": "gap-1",
        "ok": True,
        "from_event_id": 20,
        "to_event_id": 35,
        "sent": 11,
        "missing": [31, 32, 33, 34, 35],
    }
    replayed = [p for p in req.raw_answers() if b"request_id" not in p]
    assert [json.loads(p)["event_id"] for p in replayed] == list(range(20, 31))
    # each under the topic the journal keeps for it (a state document's topic is not in its envelope)
    assert {t for t, p in req.topical_answers() if b"request_id" not in p} == {
        "cmd/replay/response/monitor/events/card"
    }
    assert replayed == [live[i] for i in range(20, 31)], "not byte-identical to the first publication"
    assert req.rec.invalid == []
    await link.stop()
    await server.stop()
    req.rec.stop()


async def test_pruned_and_forged_kept_events_are_not_sent(mqtt_broker: Broker, tmp_path: Path) -> None:
    topics = new_topics()
    req = Requester(mqtt_broker, topics)
    db = tmp_path / "j.db"
    journal, link, server, forged = await table(mqtt_broker, db, topics, 10)
    # retention: events 1-3 published long ago
    conn = sqlite3.connect(db)
    conn.execute("UPDATE events SET ts = ts - 40 * 86400 WHERE event_id <= 3")
    # the attack: a kept event rewritten in the file (an ace where a seven came out)
    conn.execute("UPDATE events SET payload = replace(payload, '\"7H\"', '\"AS\"') WHERE event_id = 5")
    conn.commit()
    conn.close()
    assert server.prune() == 3
    req.ask(json.dumps({"request_id": "r", "from_event_id": 1, "to_event_id": 10}))
    (closing,) = await req.closing(1)
    assert closing["missing"] == [1, 2, 3, 5] and closing["sent"] == 6
    replayed = [json.loads(p) for p in req.raw_answers() if b"request_id" not in p]
    assert [e["event_id"] for e in replayed] == [4, 6, 7, 8, 9, 10]
    assert all(e["data"]["code"] == "7H" for e in replayed)
    assert forged == [5] and server.counters.not_chained == 1
    assert journal.verify().ok  # pruning keeps the chain verifiable
    await link.stop()
    await server.stop()
    req.rec.stop()


async def test_hostile_requests_are_answered_and_journaled(mqtt_broker: Broker, tmp_path: Path) -> None:
    topics = new_topics()
    req = Requester(mqtt_broker, topics)
    journal, link, server, _ = await table(mqtt_broker, tmp_path / "j.db", topics, 3)
    hostile: list[tuple[bytes | str, str]] = [
        (b"\xff\xfe not utf-8", "not UTF-8"),
        ('{"request_id": "a", "from_event_id": 1, "to_event_id": "\\ud800"}', "schema cmd_replay"),
        ("[" * 5000 + "]" * 5000, "larger than"),
        (
            json.dumps({"request_id": "deep", "from_event_id": 1, "to_event_id": 2, "x": [[[[[[1]]]]]]}),
            "schema cmd_replay",
        ),
        (
            json.dumps({"request_id": "big", "from_event_id": 1, "to_event_id": MAX_RANGE + 1}),
            "range too large",
        ),
        (json.dumps({"request_id": "rev", "from_event_id": 9, "to_event_id": 2}), "below"),
    ]
    for payload, _ in hostile[:RATE_PER_KEY]:
        req.ask(payload)
    closings = await req.closing(RATE_PER_KEY)
    for (_, why), answer in zip(hostile, closings, strict=False):
        assert answer["ok"] is False and why in answer["reason"], (why, answer)
    rows = [r.data for r in journal.records() if r.kind == "replay_refused"]
    assert len(rows) == RATE_PER_KEY and all(r["requester"] == "monitor" for r in rows)
    assert server.counters.refused == RATE_PER_KEY
    await link.stop()
    await server.stop()
    req.rec.stop()


async def test_a_flood_is_rate_limited_and_journaled_in_aggregate(
    mqtt_broker: Broker, tmp_path: Path
) -> None:
    topics = new_topics()
    req = Requester(mqtt_broker, topics)
    journal, link, server, _ = await table(mqtt_broker, tmp_path / "j.db", topics, 3)
    before = journal.last_seq
    total = 40
    for n in range(total):
        req.ask(json.dumps({"request_id": f"f{n}", "from_event_id": 1, "to_event_id": 3}))
    closings = await req.closing(total)
    ok = [c for c in closings if c["ok"]]
    limited = [c for c in closings if not c["ok"]]
    assert len(ok) == RATE_PER_KEY and all("rate limited" in c["reason"] for c in limited)
    rows = [r.data for r in journal.records(after_seq=before) if r.kind == "replay_refused"]
    assert len(rows) <= 2, "one journal row per window, not one per refused request"
    assert server.counters.rate_limited == total - RATE_PER_KEY
    await link.stop()
    await server.stop()
    req.rec.stop()


async def test_a_request_without_a_response_topic_is_answered_on_the_fallback(tmp_path: Path) -> None:
    """The refusal goes to the plain fallback topic. With the production ACL no client account may read that
    topic (docs/mqtt.md: answers only under the requester's own name), so the answer is read here on a broker
    without an ACL: what is checked is the replay server's answer, not the ACL."""
    topics = new_topics()
    open_broker = Broker.start(tmp_path / "broker", acl=False)
    mqtt_broker = open_broker
    watcher = Recorder(mqtt_broker, "monitor", topics, filters=("cmd/replay/response",)).start()
    req = Requester(mqtt_broker, topics)
    _journal, link, server, _ = await table(mqtt_broker, tmp_path / "j.db", topics, 1)
    req.ask(json.dumps({"request_id": "v311", "from_event_id": 1, "to_event_id": 1}), response=False)
    await watcher.await_for(lambda m: len(m) >= 1)
    (answer,) = watcher.on("cmd/replay/response")
    assert answer["ok"] is False and "response topic" in answer["reason"] and answer["request_id"] == "v311"
    await link.stop()
    await server.stop()
    req.rec.stop()
    watcher.stop()
    open_broker.stop()


async def test_an_mqtt311_client_names_its_account_with_reply_to_and_gets_the_events(
    mqtt_broker: Broker, tmp_path: Path
) -> None:
    """MQTT 3.1.1 has no response topic (the bench observer and audit consumers use 3.1.1 persistent sessions:
    docs/reliability.md F3): ``reply_to`` names the account, and the answer goes to that account's own topic."""
    topics = new_topics()
    req = Requester(mqtt_broker, topics)
    _journal, link, server, _ = await table(mqtt_broker, tmp_path / "j.db", topics, 3)
    req.ask(json.dumps({"request_id": "v311", "from_event_id": 1, "to_event_id": 3, "reply_to": "monitor"}),
            response=False)  # fmt: skip
    (closing,) = await req.closing(1)
    assert closing["ok"] is True and closing["sent"] == 3 and closing["missing"] == [], closing
    assert [a["event_id"] for a in req.answers() if "request_id" not in a] == [1, 2, 3]
    await link.stop()
    await server.stop()
    req.rec.stop()
