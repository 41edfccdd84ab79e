"""Players at the seats (issue 41) cross the bridge, like the dealer on duty: the real table service (emulated
shoe, its own mosquitto running the bridge section ``controller.mqtt.floor_bridge.render`` writes) publishes
``events/player`` and ``state/players`` when the pit seats a player over ``cmd/dealer``; a floor reader on the floor
broker (the shipped floor ACL) receives both, each valid against its schema."""

from __future__ import annotations

import json
from pathlib import Path

from controller.broker import BrokerKind
from controller.mqtt.floor_bridge import load, render
from controller.topics import Topics
from tablebench.broker import Broker
from tablebench.demo_session import prepare_session
from tablebench.stack import Stack, StackOptions
from tests.support.broker import Recorder
from tests.support.floor import FLOOR_USERS
from tests.test_floor_bridge import write_configs

WAIT = 60.0


async def test_a_seated_player_reaches_the_floor_through_the_bridge(tmp_path: Path) -> None:
    floor = Broker.start(tmp_path / "floor", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1")
    table_toml, bridge_toml = write_configs(tmp_path, [floor.port], insecure_no_tls=True)
    section = tuple(render(load(table_toml, bridge_toml)).splitlines())
    rec = Recorder(floor, "monitor", Topics("S1", "T1"), filters=("events/player", "state/players"))
    stack = Stack(
        tmp_path / "stack", StackOptions(site="S1", table_id="T1", jackpot=False, broker_config=section)
    )
    dealer = None
    try:
        rec.start()
        stack.start()
        await prepare_session(stack, "pt-2001", lambda line: None)
        dealer = stack.client("dealer")
        await dealer.connect()
        await dealer.dealer("player_in", seat=4, card="6012345678")
        await rec.await_for(lambda m: any(t == "events/player" for t, _, _ in m), WAIT)
        (event,) = rec.on("events/player")
        assert event["data"]["action"] == "in" and event["data"]["player"] == "card:6012345678"
        await rec.await_for(
            lambda m: any(t == "state/players" and "4" in json.loads(p)["data"]["seats"] for t, p, _ in m),
            WAIT,
        )
        assert not rec.invalid, rec.invalid  # every message checked against its schema on the floor side
    finally:
        if dealer is not None:
            await dealer.close()
        rec.stop()
        stack.stop()
        floor.stop()
