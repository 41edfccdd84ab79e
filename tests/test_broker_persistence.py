"""Every broker the product starts persists sessions often enough that a crash loses at most a second of them
(issue 14 item 5): events queued for an absent persistent consumer survive a SIGKILL of the broker."""

from __future__ import annotations

import json
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from support.broker import USERS, Recorder, new_topics

from tablebench.broker import Broker


def test_queued_events_survive_a_broker_sigkill(tmp_path: Path) -> None:
    broker = Broker.start(tmp_path / "broker", users=USERS)
    try:
        topics = new_topics()
        # the consumer's persistent session (3.1.1, fixed client id), then it goes away
        rec = Recorder(broker, "monitor", topics, filters=("events/#",), persistent=True, v5=False).start()
        rec.stop()
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="writer-table", protocol=mqtt.MQTTv311)
        pub.username_pw_set("table-T1", USERS["table-T1"])
        pub.connect(broker.host, broker.port)
        pub.loop_start()
        for i in range(1, 6):
            payload = {"event_id": i, "ts": "2026-11-23T12:00:00.000Z", "type": "lid", "table": "T1"}
            payload["data"] = {"state": "open", "previous": "closed"}
            pub.publish(topics.abs("events/lid"), json.dumps(payload), qos=1).wait_for_publish(10)
        pub.loop_stop()
        pub.disconnect()
        db = broker.workdir / "mosquitto.db"
        queued_at = time.time()
        deadline = time.monotonic() + 20
        while not (db.exists() and db.stat().st_mtime > queued_at):  # the next autosave took them in
            assert time.monotonic() < deadline, "the broker never saved its database (autosave off?)"
            time.sleep(0.05)
        broker.kill()
        broker.restart()
        rec.start()  # the same client id: its session is restored from the saved database
        rec.wait_for(lambda m: len(m) >= 5, timeout=20)
        assert sorted(set(rec.event_ids())) == [1, 2, 3, 4, 5]
        rec.stop()
    finally:
        broker.stop()
