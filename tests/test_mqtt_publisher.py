"""Outbox → real mosquitto: nothing lost or reordered across broker outages and controller restarts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from support.broker import Recorder, dedupe_in_order, link_config, new_topics

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


async def start_controller(
    broker: Broker, db: Path, topics: Topics, **kw
) -> tuple[Journal, MqttLink, OutboxPublisher]:
    journal = Journal(db, table_id=topics.table_id)
    link = MqttLink(link_config(broker, reconnect_min_s=0.05, reconnect_max_s=0.5), topics)
    pub = OutboxPublisher(journal, link, **kw)
    pub.start()
    await link.start()
    return journal, link, pub


async def test_broker_outage_mid_stream_loses_and_reorders_nothing(
    mqtt_broker: Broker, tmp_path: Path
) -> None:
    topics = new_topics()
    # A persistent QoS 1 consumer: its session (and its queued messages) survive the broker's clean restart.
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("events/#",), persistent=True).start()
    journal, link, pub = await start_controller(mqtt_broker, tmp_path / "j.db", topics, window=8)
    await link.wait_connected()
    total = 300
    for i in range(1, 101):
        emit(journal, i)
        if i % 10 == 0:
            await asyncio.sleep(0)
    await rec.await_for(lambda m: len(m) >= 20)  # mid-stream: some delivered, some surely not yet
    await asyncio.to_thread(mqtt_broker.stop)
    for i in range(101, 201):  # the table keeps playing during the outage
        emit(journal, i)
    assert journal.outbox_size() > 0
    await asyncio.to_thread(mqtt_broker.restart)
    for i in range(201, total + 1):
        emit(journal, i)
        await asyncio.sleep(0)
    await rec.await_for(lambda m: len(set(rec.event_ids())) >= total, timeout=30)
    while journal.outbox_size():
        await asyncio.sleep(0.02)
    ids = rec.event_ids()
    assert dedupe_in_order(ids) == list(range(1, total + 1)), "consumer must see a gapless ordered sequence"
    assert [json.loads(p)["data"]["shoe_seq"] for t, p, _ in rec.messages][: len(ids)] == ids
    assert pub.counters.acked == total and link.connects >= 2
    assert not rec.invalid
    # The table is quiet now: the acknowledged rows' deletes, which ride in the next commit, go on their own.
    raw = sqlite3.connect(tmp_path / "j.db")
    for _ in range(100):
        if raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0:
            break
        await asyncio.sleep(0.05)
    assert raw.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
    raw.close()
    await link.stop()
    rec.stop()
    journal.close()


async def test_controller_restart_resends_unacked_outbox_rows(mqtt_broker: Broker, tmp_path: Path) -> None:
    topics = new_topics()
    db = tmp_path / "j.db"
    # First life: the broker is unreachable (stopped), the table journals 40 events, then the process ends.
    await asyncio.to_thread(mqtt_broker.stop)
    journal, link, pub = await start_controller(mqtt_broker, db, topics)
    for i in range(1, 41):
        emit(journal, i)
    await asyncio.sleep(0.05)
    await link.stop()
    journal.close()
    assert pub.counters.acked == 0
    # Second life: same journal file, broker back.
    await asyncio.to_thread(mqtt_broker.restart)
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("events/#",)).start()
    journal, link, pub = await start_controller(mqtt_broker, db, topics)
    assert journal.outbox_size() == 40
    for i in range(41, 51):
        emit(journal, i)
    await rec.await_for(lambda m: len(set(rec.event_ids())) >= 50)
    while journal.outbox_size():
        await asyncio.sleep(0.02)
    assert dedupe_in_order(rec.event_ids()) == list(range(1, 51))
    assert not rec.invalid
    await link.stop()
    rec.stop()
    journal.close()


async def test_retained_state_republished_after_reconnect(tmp_path: Path) -> None:
    """A broker that lost its retained store (no persistence) gets the table state back on reconnect."""
    from support.broker import USERS

    broker = Broker.start(tmp_path / "b", users=USERS, persistence=False)
    topics = new_topics()
    journal, link, _pub = await start_controller(broker, tmp_path / "j.db", topics)
    await link.wait_connected()
    with journal.transaction() as tx:
        tx.publish(state_topic("lid"), "state", {"state": "locked"}, retain=True)
    while journal.outbox_size():
        await asyncio.sleep(0.02)
    await asyncio.to_thread(broker.restart)  # retained messages are gone now
    await asyncio.sleep(0.1)
    await link.wait_connected()
    late = Recorder(broker, "monitor", topics, filters=("state/#", "status")).start()
    await late.await_for(
        lambda m: any(t == "state/lid" for t, _, _ in m) and any(t == "status" for t, _, _ in m)
    )
    assert late.on("state/lid")[0]["data"] == {"state": "locked"}
    assert late.on("status") == ["online"]
    assert not late.invalid
    late.stop()
    await link.stop()
    journal.close()
    broker.stop()


_CHILD = """
import asyncio, sys
sys.path.insert(0, "tests")
from controller.mqtt.link import MqttLink, LinkConfig
from controller.topics import Topics
async def main():
    link = MqttLink(LinkConfig(host="127.0.0.1", port=int(sys.argv[1]), username="table-T1",
                               password=sys.argv[3], keepalive=5), Topics(sys.argv[2], "T1"))
    await link.start(); await link.wait_connected(); print("up", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""


async def test_status_online_then_offline_by_last_will_when_controller_killed(mqtt_broker: Broker) -> None:
    from support.broker import USERS

    topics = new_topics()
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("status",)).start()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(mqtt_broker.port), topics.site, USERS["table-T1"]],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ},
    )
    try:
        assert child.stdout is not None
        assert (await asyncio.to_thread(child.stdout.readline)).strip() == b"up"
        await rec.await_for(lambda m: rec.on("status") == ["online"])
        child.send_signal(signal.SIGKILL)  # no DISCONNECT: the broker must publish the last will
        await rec.await_for(lambda m: rec.on("status") == ["online", "offline"])
    finally:
        child.kill()
        child.wait()
    late = Recorder(mqtt_broker, "monitor", topics, filters=("status",)).start()
    await late.await_for(lambda m: late.on("status") == ["offline"])
    assert [r for _, _, r in late.messages] == [True]  # retained
    assert not rec.invalid and not late.invalid
    rec.stop()
    late.stop()
