"""The rendered bridge after an uplink cut during floor broker crashes (issue 24): a table host (its own network
namespace, its own mosquitto with the bridge ``controller.mqtt.floor_bridge`` renders, MQTT v5 across) publishes
numbered events; its uplink is cut, the floor broker is SIGKILLed and restarted three times while it is cut, the
cut lasts, then heals. Every event published from the cut on reaches a subscriber on the floor within
``AFTER_HEAL_S`` of healing: the bridge retries at most every ``restart_timeout`` cap (30 s) and a dead link
shows in 1.5 keepalives, so a bridge that stays stalled (the 120 s seen once, docs/floor.md's failure table)
fails here. The namespace/veth names start with ``fb``."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.broker import BrokerKind
from hil_tests.test_floor_netns import KEEPALIVE, TableHost
from tablebench.broker import Broker
from tests.support.floor import FLOOR_USERS, wait_until

ROOT = Path(__file__).resolve().parents[1]
CUT_S = float(os.environ.get("FLOOR_HIL_CUT_S", "40"))
AFTER_HEAL_S = 30 + 1.5 * KEEPALIVE + 15  # restart_timeout's cap, a keepalive to notice, slack for the load
TOPIC = "casino/S1/table/T1/events/n"
PUBLISHER = """
import sys, time, paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
c = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="fbpub", clean_session=False)
c.connect("127.0.0.1", 1883); c.loop_start(); n = 0
while sys.stdin.readline().strip() != "stop":
    n += 1
    c.publish(sys.argv[1], str(n), qos=1).wait_for_publish(10)
    print(n, flush=True)
"""
pytestmark = [
    pytest.mark.hil,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip(8)"),
]


class FloorSubscriber:
    """The archive's account on the floor broker, resubscribing after each restart; records every number."""

    def __init__(self, port: int) -> None:
        self.seen: set[int] = set()
        self.lock = threading.Lock()
        self.client = mqtt.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="fbsub",
                                  protocol=mqtt.MQTTv311, clean_session=False)  # fmt: skip
        self.client.username_pw_set("archive", FLOOR_USERS["archive"])
        self.client.reconnect_delay_set(1, 1)
        self.client.on_connect = lambda c, *_: c.subscribe(TOPIC, qos=1)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, _c: mqtt.Client, _u: object, msg: mqtt.MQTTMessage) -> None:
        with self.lock:
            self.seen.add(int(msg.payload))

    def top(self) -> int:
        with self.lock:
            return max(self.seen, default=0)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def test_the_bridge_delivers_after_an_uplink_cut_during_floor_broker_crashes(tmp_path):
    tag, net = uuid.uuid4().hex[:4], random.randint(100, 250)
    floor = Broker.start(
        tmp_path / "floor", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1", host="0.0.0.0"
    )
    host = sub = pub = None
    try:
        host = TableHost(tag, 1, net, tmp_path, floor.port, prefix="fb")
        sub = FloorSubscriber(floor.port)
        pub = subprocess.Popen(["ip", "netns", "exec", host.ns, sys.executable, "-c", PUBLISHER, TOPIC], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert pub.stdin is not None and pub.stdout is not None
        published = [0]

        def tick() -> None:  # one event every 0.2 s until told to stop
            while pub.poll() is None:
                try:
                    pub.stdin.write("go\n")
                    pub.stdin.flush()
                    published[0] = int(pub.stdout.readline())
                except (OSError, ValueError):  # the publisher was stopped
                    return
                time.sleep(0.2)

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        wait_until(lambda: sub.top() >= 5, 60, "events through the bridge")
        host.link(False)  # cut ...
        first = sub.top() + 1  # every event from here on is queued on the table's broker
        for _ in range(3):  # ... while the floor broker crashes and comes back, three times
            floor.kill()
            time.sleep(0.5)
            floor.restart()
            time.sleep(1.0)
        time.sleep(max(0.0, CUT_S - 4.5))
        host.link(True)  # heal
        healed = time.monotonic()
        at_heal = published[0]
        wait_until(lambda: published[0] >= at_heal + 3, 30, "events published after healing")
        last = published[0]
        want = set(range(first, last + 1))
        try:
            wait_until(lambda: want <= sub.seen, AFTER_HEAL_S, "every event after healing")
        except AssertionError:
            lost = sorted(want - sub.seen)
            log = (host.dir / "mosquitto.log").read_text()[-3000:]
            raise AssertionError(
                f"{len(lost)} of {len(want)} not delivered {AFTER_HEAL_S:.0f} s after healing: {lost[:10]}\n{log}"
            ) from None
        assert time.monotonic() - healed < AFTER_HEAL_S
    finally:
        if pub is not None:
            pub.kill()
            pub.wait(10)
        if sub is not None:
            sub.close()
        if host is not None:
            host.close()
        floor.stop()
