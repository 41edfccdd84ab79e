"""Nothing is published under the table's identity that the journal's chain does not record (issue 13 §1).

The attacker has write access to the journal file (not to the audit key, not to the broker account): they insert
an outbox row, edit a waiting one or replace a retained document. Against a real mosquitto, the publisher
refuses each, counts it and reports it (the service raises a critical ``journal_integrity`` alert), and the
table's own events still flow in order."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from support.broker import Recorder, link_config, new_topics

from controller.canonical import canonical
from controller.journal.store import Journal
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.topics import Topics, event_topic, state_topic
from tablebench.broker import Broker


def card(i: int) -> dict:
    return {
        "code": "7H",
        "rank": "7",
        "suit": "H",
        "shoe_seq": i,
        "face_up": True,
        "recipient": "seat:1:0",
        "counts": True,
    }


def emit(journal: Journal, i: int) -> None:
    with journal.transaction() as tx:
        tx.append("card", {"i": i})
        tx.publish(event_topic("card"), "card", card(i))


def forged_envelope(event_id: int, i: int) -> str:
    """A well-formed card event, as the table would publish it (the attacker read the source)."""
    data = card(i) | {"code": "AS", "rank": "A", "suit": "S"}
    return canonical(
        {"data": data, "event_id": event_id, "table": "T1", "ts": "2026-11-23T12:00:00.000Z", "type": "card"}
    )


async def run_publisher(broker: Broker, db: Path, topics: Topics):
    journal = Journal(db, table_id=topics.table_id)
    link = MqttLink(link_config(broker, reconnect_min_s=0.05, reconnect_max_s=0.5), topics)
    pub = OutboxPublisher(journal, link)
    refused: list[tuple[str, int, str]] = []
    pub.on_forged = lambda topic, event_id, reason: refused.append((topic, event_id, reason))
    pub.start()
    await link.start()
    await link.wait_connected()
    return journal, link, pub, refused


async def drained(journal: Journal) -> None:
    async with asyncio.timeout(20):
        while journal.outbox_size() > 0:
            await asyncio.sleep(0.02)


async def test_forged_outbox_row_is_never_published(mqtt_broker: Broker, tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    journal = Journal(db, table_id="T1")
    for i in range(1, 4):
        emit(journal, i)  # committed while the broker was out of reach: they wait in the outbox
    journal.close()
    # the attack: a row inserted in the file, in order, looking like the table's next card (the outbox holds the
    # pending ids, the envelopes are the kept events': an envelope naming the last published record)
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO events(event_id, ts, topic, payload, qos, retain, seq)"
        " SELECT 4, ts, ?, ?, 1, 0, seq FROM events WHERE event_id = 3",
        (event_topic("card"), forged_envelope(4, 4)),
    )
    conn.execute("INSERT INTO outbox(event_id) VALUES (4)")
    # and one of the table's own rows edited while it waits
    conn.execute("UPDATE events SET payload = ? WHERE event_id = 2", (forged_envelope(2, 2),))
    conn.commit()
    conn.close()

    topics = new_topics()
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("events/#",)).start()
    journal, link, pub, refused = await run_publisher(mqtt_broker, db, topics)
    emit(journal, 5)  # the table carries on: its next event is published
    await rec.await_for(lambda m: 5 in rec.event_ids())
    assert sorted(set(rec.event_ids())) == [1, 3, 5]
    assert all(json.loads(p)["data"]["code"] == "7H" for _, p, _ in rec.messages), "a forged card went out"
    assert pub.counters.forged == 2
    await asyncio.sleep(0)  # the reports go out on the loop, after the send
    assert sorted(e for _, e, _ in refused) == [2, 4]
    assert all("not recorded in the journal's chain" in reason for _, _, reason in refused)
    await link.stop()
    rec.stop()
    journal.close()


async def test_forged_retained_document_is_not_republished(mqtt_broker: Broker, tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    topics = new_topics()
    journal, link, pub, refused = await run_publisher(mqtt_broker, db, topics)
    with journal.transaction() as tx:
        tx.append("state", {})
        tx.publish(
            state_topic("lid"), "state", {"state": "closed", "locked": True, "unlocked_by": None}, retain=True
        )
    await drained(journal)
    await link.stop()
    journal.close()
    # the attack: the retained copy (republished after every reconnect) rewritten to an unlocked lid
    conn = sqlite3.connect(db)
    (payload,) = conn.execute("SELECT payload FROM retained WHERE topic = 'state/lid'").fetchone()
    doc = json.loads(payload)
    doc["data"] = {"state": "open", "locked": False, "unlocked_by": "supervisor"}
    conn.execute("UPDATE retained SET payload = ? WHERE topic = 'state/lid'", (canonical(doc),))
    conn.commit()
    conn.close()
    # a fresh broker has lost its retained messages: the table republishes its copies on connect
    mqtt_broker.stop()
    for f in mqtt_broker.workdir.glob("*.db"):
        f.unlink()
    mqtt_broker.restart()
    journal, link, pub, refused = await run_publisher(mqtt_broker, db, topics)
    async with asyncio.timeout(20):
        while pub.counters.forged < 1:
            await asyncio.sleep(0.02)
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("state/#",)).start()
    with journal.transaction() as tx:  # a marker: everything before it has been handled by the broker
        tx.append("state", {})
        tx.publish(state_topic("jam"), "state", {"jammed": False}, retain=True)
    await rec.await_for(lambda m: any(t == "state/jam" for t, _, _ in m))
    assert rec.on("state/lid") == [], "the forged retained document was published"
    assert pub.counters.retained_republished == 0
    await asyncio.sleep(0)
    assert [topic for topic, _, _ in refused] == ["state/lid"]
    await link.stop()
    rec.stop()
    journal.close()


def test_is_chained_only_for_the_rows_the_chain_records(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    j = Journal(db, table_id="T1")
    emit(j, 1)
    (row,) = j.outbox_pending()
    assert j.is_chained(row.event_id, row.topic, row.payload, row.qos, row.retain)
    j.close()
    j = Journal(db, table_id="T1")  # a new process: the digest is read from the chain
    assert j.is_chained(row.event_id, row.topic, row.payload, row.qos, row.retain)
    assert not j.is_chained(row.event_id, row.topic, row.payload.replace("7H", "AS"), row.qos, row.retain)
    assert not j.is_chained(row.event_id, "events/jackpot", row.payload, row.qos, row.retain)
    assert not j.is_chained(row.event_id, row.topic, row.payload, row.qos, True)
    assert not j.is_chained(99, row.topic, row.payload, row.qos, row.retain)
