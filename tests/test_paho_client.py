"""The paho client every MQTT client of the product gets (controller/mqtt/paho_client.py, issue 31): its
reconnection back-off starts at a fraction of a second. paho declares the delays ``int``; the product passes a
float (``quick_reconnect``, with a narrow ``type: ignore``), which holds only as long as paho keeps the float."""

from __future__ import annotations

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import MQTTProtocolVersion

from controller.mqtt.paho_client import (
    RECONNECT_FIRST_S,
    RECONNECT_LONGEST_S,
    BrokerEndpoint,
    new_client,
    quick_reconnect,
)


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
