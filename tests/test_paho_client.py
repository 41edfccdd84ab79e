"""The paho client every MQTT client of the product gets (controller/mqtt/paho_client.py, issue 31): its
reconnection back-off starts at a fraction of a second. paho declares the delays ``int``; the product passes a
float (``quick_reconnect``, with a narrow ``type: ignore``), which holds only as long as paho keeps the float.
The archive's read-ahead session (``ReadAheadClient``): every message whole and in order from a queued flood, and
what it did not acknowledge delivered again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import MQTTProtocolVersion

from controller.mqtt.paho_client import (
    RECONNECT_FIRST_S,
    RECONNECT_LONGEST_S,
    BrokerEndpoint,
    ReadAheadClient,
    new_client,
    quick_reconnect,
)
from tablebench.broker import Broker


def test_the_back_off_starts_below_a_second_and_doubles_to_the_longest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = new_client(BrokerEndpoint("localhost", 1883), "backoff")
    quick_reconnect(client)
    clock = [1000.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(mqtt, "time_func", lambda: clock[0])
    monkeypatch.setattr(mqtt.time, "sleep", sleep)
    for _ in range(7):
        start = clock[0]
        client._reconnect_wait()  # what paho's network thread runs between two attempts
        waits.append(round(clock[0] - start, 6))
    assert RECONNECT_FIRST_S < 1
    assert waits == [0.2, 0.4, 0.8, 1.6, 3.2, RECONNECT_LONGEST_S, RECONNECT_LONGEST_S]


@pytest.mark.parametrize("protocol", [MQTTProtocolVersion.MQTTv5, MQTTProtocolVersion.MQTTv311])
def test_the_protocol_asked_for_is_the_one_the_client_speaks(protocol: MQTTProtocolVersion) -> None:
    client = new_client(BrokerEndpoint("localhost", 1883), "proto", protocol=protocol)
    assert client.protocol == protocol


def test_paho_still_has_what_the_read_ahead_client_stands_on() -> None:
    """ReadAheadClient (the archive's session) overrides or calls these of paho's own: a paho without them is
    caught here, not on the floor."""
    for name in ("_create_socket", "_handle_publish", "_packet_queue", "loop_read"):
        assert callable(getattr(mqtt.Client, name)), name
    client = new_client(BrokerEndpoint("localhost", 1883), "ra", read_ahead=True)
    assert isinstance(client, ReadAheadClient)
    assert {"command", "packet"} <= set(client._in_packet)
    assert client._msgtime_mutex is not None
    assert set(mqtt.MQTTMessage.__slots__) == {
        "_topic", "dup", "info", "mid", "payload", "properties", "qos", "retain", "state", "timestamp",
    }  # fmt: skip
    with pytest.raises(NotImplementedError):
        client.message_callback_add("t/#", lambda *a: None)


# payload sizes around the edges of a packet's remaining length (1, 2 and 3 bytes) and beyond one read ahead
SIZES = [0, 1, 100, 119, 120, 121, 16_375, 16_376, 16_377, 70_000, *range(200, 700, 3)]


def _wait(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_read_ahead_session_receives_every_message_whole_in_order_and_keeps_what_it_did_not_ack(
    tmp_path: Path,
) -> None:
    broker = Broker.start(tmp_path / "broker", users={"sub": "sub", "pub": "pub"}, acl=False,
                          extra_config=("max_inflight_messages 0",))  # fmt: skip
    got: list[tuple[str, bytes, int, int, bool]] = []
    subscribed = threading.Event()

    def session() -> mqtt.Client:
        client = new_client(BrokerEndpoint(broker.host, broker.port, "sub", "sub"), "ra-session",
                            protocol=MQTTProtocolVersion.MQTTv311, clean_session=False, manual_ack=True,
                            read_ahead=True)  # fmt: skip
        client.on_message = lambda c, u, m: got.append((m.topic, m.payload, m.mid, m.qos, m.retain))
        client.on_connect = lambda c, u, f, rc, p: c.subscribe("t/#", qos=1)
        client.on_subscribe = lambda *a: subscribed.set()
        client.connect(broker.host, broker.port)
        client.loop_start()
        return client

    try:
        sub = session()
        assert subscribed.wait(10)
        sub.disconnect()
        sub.loop_stop()
        pub = new_client(BrokerEndpoint(broker.host, broker.port, "pub", "pub"), "ra-pub")
        pub.connect(broker.host, broker.port)
        pub.loop_start()
        sent = [(f"t/{i % 7}/é", bytes([i % 251]) * size, 1 if i % 5 else 0) for i, size in enumerate(SIZES)]
        infos = [pub.publish(topic, payload, qos=qos) for topic, payload, qos in sent]
        for info in infos:
            info.wait_for_publish(10)
        # the session was away: the broker queued them; they arrive back to back on reconnecting
        queued = [s for s in sent if s[2] == 1]  # a persistent session is queued its QoS 1 messages only
        sub = session()
        assert _wait(lambda: len(got) >= len(queued)), f"{len(got)} of {len(queued)}"
        assert [(t, p, q) for t, p, _, q, _ in got] == queued
        half = len(got) // 2
        assert isinstance(sub, ReadAheadClient)
        sub.ack_many([(mid, qos) for _, _, mid, qos, _ in got[:half]])
        assert _wait(lambda: not sub._out_packet)  # the acknowledgements written to the broker
        sub.disconnect()
        sub.loop_stop()
        got.clear()
        sub = session()
        # what was not acknowledged comes again, what was does not
        assert _wait(lambda: len(got) >= len(queued) - half)
        assert [(t, p) for t, p, *_ in got] == [(t, p) for t, p, _ in queued[half:]]
        sub.disconnect()
        sub.loop_stop()
        pub.disconnect()
        pub.loop_stop()
    finally:
        broker.stop()
