"""MQTT v5 -> 3.1.1 fallback (LinkConfig protocol "auto", docs/mqtt.md): against a broker that only speaks
3.1.1, the link's first CONNECT (v5) is refused with "unacceptable protocol version" and the link connects again
as 3.1.1. mosquitto always offers v5, so a small proxy in front of the real mosquitto plays the old broker: it
refuses a v5 CONNECT the way a 3.1.1 broker does (CONNACK return code 1, then close) and passes a 3.1.1
connection through untouched."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import replace

from support.broker import Recorder, link_config, new_topics

from controller.mqtt.link import MqttLink
from tablebench.broker import Broker

UNACCEPTABLE_PROTOCOL = b"\x20\x02\x00\x01"  # MQTT 3.1.1 CONNACK, return code 1


def _protocol_level(connect: bytes) -> int | None:
    """The protocol level of a complete CONNECT packet at the start of ``connect`` (None: not there yet)."""
    if len(connect) < 2 or connect[0] >> 4 != 1:
        return None
    i, length, shift = 1, 0, 0
    while i < len(connect):  # the remaining length: a variable byte integer
        byte = connect[i]
        length |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            break
        shift += 7
    else:
        return None
    if len(connect) < i + length or length < 7:
        return None
    name_len = int.from_bytes(connect[i : i + 2], "big")
    return connect[i + 2 + name_len]


class V311OnlyProxy:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.levels: list[int] = []  # the protocol level of every CONNECT seen
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = b""
        while (level := _protocol_level(head)) is None:
            chunk = await reader.read(4096)
            if not chunk:
                writer.close()
                return
            head += chunk
        self.levels.append(level)
        if level == 5:
            writer.write(UNACCEPTABLE_PROTOCOL)
            await writer.drain()
            writer.close()
            return
        up_r, up_w = await asyncio.open_connection(self.broker.host, self.broker.port)
        up_w.write(head)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


async def test_auto_falls_back_to_v311_when_the_broker_refuses_v5(mqtt_broker: Broker) -> None:
    proxy = V311OnlyProxy(mqtt_broker)
    await proxy.start()
    topics = new_topics()
    rec = Recorder(mqtt_broker, "monitor", topics, filters=("events/#", "status"), validate=False).start()
    cfg = replace(link_config(mqtt_broker, reconnect_min_s=0.05, reconnect_max_s=0.2), port=proxy.port)
    link = MqttLink(cfg, topics)
    try:
        await link.start()
        await link.wait_connected(10)
        assert proxy.levels[:2] == [5, 4]  # refused as v5, accepted as 3.1.1 (protocol level 4)
        assert not link.is_v5
        doc = {"event_id": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "card", "table": "T1", "data": {}}
        assert link.publish("events/test", json.dumps(doc), qos=1) is not None
        await rec.await_for(lambda m: any(t == "events/test" for t, _, _ in m))
        await rec.await_for(lambda m: any(t == "status" and p == b"online" for t, p, _ in m))
    finally:
        await link.stop()
        rec.stop()
        await proxy.stop()
