"""The bench's recording monitor keeps its subscription across a clean broker restart.

The HIL bench reconciles every event id the controller committed against what its monitor received
(docs/reliability.md F3): the controller resends its outbox as soon as it reconnects, possibly before the
monitor is back, so the broker must hold the monitor's session and queue those messages for it. This checks
that against the installed mosquitto with the bench's own client, so a client or broker change that breaks it
fails here and not, now and then, in a HIL scenario.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from tablebench.bench.recorder import BenchClient
from tablebench.broker import Broker

USERS = {"monitor": "monitor-pw", "publisher": "publisher-pw"}
PREFIX = "casino/test/table/T1"


def _publish(broker: Broker, event_ids: list[int]) -> None:
    """Publish QoS 1 events and wait for each PUBACK (a fresh v5 client, as the controller would)."""
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="publisher", protocol=mqtt.MQTTv5)
    pub.username_pw_set("publisher", USERS["publisher"])
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    try:
        for event_id in event_ids:
            info = pub.publish(f"{PREFIX}/events/round", json.dumps({"event_id": event_id}), qos=1)
            info.wait_for_publish(10)
    finally:
        pub.disconnect()
        pub.loop_stop()


async def test_monitor_gets_what_was_published_while_it_was_away_across_a_broker_restart(
    tmp_path: Path,
) -> None:
    broker = Broker.start(tmp_path / "broker", users=USERS, acl=False)
    monitor = BenchClient(
        broker.host,
        broker.port,
        username="monitor",
        password=USERS["monitor"],
        prefix=PREFIX,
        persistent=True,
    )
    try:
        await monitor.connect(10)
        await asyncio.to_thread(_publish, broker, [1])
        await monitor.wait_for(lambda v: monitor.received.contiguous >= 1, 10)

        # The monitor is away (its network thread stopped) while the broker stops cleanly and starts again,
        # and the publisher resends before the monitor is back: only the broker's session can keep these.
        await asyncio.to_thread(monitor.mqtt.paho.loop_stop)
        await asyncio.to_thread(broker.stop)
        await asyncio.to_thread(broker._launch)
        await asyncio.to_thread(_publish, broker, [2, 3, 4])
        assert monitor.received.contiguous == 1  # not yet: the monitor has not reconnected

        monitor.mqtt.paho.loop_start()
        await monitor.wait_for(lambda v: monitor.received.contiguous >= 4, 20)
        assert monitor.first_seen_ids() == [1, 2, 3, 4]
    finally:
        await monitor.close()
        broker.stop()
