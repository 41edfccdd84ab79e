"""Table broker → floor broker bridge (issue 18), with two real mosquitto processes on loopback: the table broker
runs the section ``controller.mqtt.floor_bridge.render`` writes; what the table publishes while the floor broker is
down reaches the floor afterwards, in order; a floor command reaches the table through the bridge."""

from __future__ import annotations

import json
import threading

import pytest

from controller.broker import BrokerKind
from controller.broker import main as broker_main
from controller.mqtt.floor_bridge import BridgeConfigError, load, render
from controller.topics import Topics
from tablebench.broker import Broker
from tests.support.broker import Recorder
from tests.support.floor import FLOOR_USERS, StandInTable, wait_until


def write_configs(tmp_path, floor_ports: list[int], **bridge_extra) -> tuple:
    table_toml = tmp_path / "table.toml"
    table_toml.write_text(
        '[table]\nid = "T1"\nsite = "S1"\nprofile = "pt-2001"\n[mqtt]\nhost = "localhost"\n'
    )
    (tmp_path / "floor-password").write_text(FLOOR_USERS["table-T1"] + "\n")
    hosts = ", ".join(f'"127.0.0.1:{p}"' for p in floor_ports)
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in bridge_extra.items())
    bridge_toml = tmp_path / "bridge.toml"
    bridge_toml.write_text(
        f'[bridge]\nhosts = [{hosts}]\nusername = "table-T1"\npassword_file = "floor-password"\n{extra}'
    )
    return table_toml, bridge_toml


def test_rendered_section_and_refusals(tmp_path):
    table_toml, bridge_toml = write_configs(tmp_path, [8883, 8884], ca="ca.crt")
    text = render(load(table_toml, bridge_toml))
    assert "address 127.0.0.1:8883 127.0.0.1:8884" in text and "round_robin true" in text
    assert "cleansession false" in text and "bridge_cafile " + str(tmp_path / "ca.crt") in text
    assert "topic events/# out 1 casino/S1/table/T1/ casino/S1/table/T1/" in text
    assert "topic cmd/supervisor in 1 casino/S1/table/T1/ casino/S1/table/T1/" in text
    assert "topic cmd/dealer" not in text  # the dealer's commands never come from the floor
    # through the broker module's render hook: passwd, acl and the bridge file (0600: it holds a password)
    out = tmp_path / "etc"
    assert (
        broker_main(
            [
                "render",
                "--site",
                "S1",
                "--out",
                str(out),
                "--bridge",
                str(bridge_toml),
                "--table-config",
                str(table_toml),
            ]
        )
        == 0
    )
    assert (out / "floor-bridge.conf").read_text() == text and (
        out / "floor-bridge.conf"
    ).stat().st_mode & 0o077 == 0
    # refusals: no TLS, a host with a newline (config injection), unknown keys
    (tmp_path / "a").mkdir()
    _, no_tls = write_configs(tmp_path / "a", [8883])
    with pytest.raises(BridgeConfigError, match="ca is required"):
        load(table_toml, no_tls)
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[bridge]\nhosts = ["x:1\\naddress evil:1"]\nusername = "table-T1"\n'
        'password_file = "floor-password"\nca = "c"\n'
    )
    with pytest.raises(BridgeConfigError, match="hosts"):
        load(table_toml, bad)
    bad.write_text(
        '[bridge]\nhosts = ["x:1"]\nusername = "table-T1"\npassword_file = "floor-password"\nca = "c"\nfoo = 1\n'
    )
    with pytest.raises(BridgeConfigError, match="unknown"):
        load(table_toml, bad)


def test_a_linked_table_brings_in_its_links_meter_document_only(tmp_path):
    """docs/jackpot.md "Linked progressive (table side)": with ``[jackpot] link`` the bridge maps the floor's
    ``casino/<site>/progressive/<link>/meter`` in to ``<prefix>/progressive/meter``; without one, nothing."""
    table_toml, bridge_toml = write_configs(tmp_path, [8883], ca="ca.crt")
    assert "progressive" not in render(load(table_toml, bridge_toml))
    table_toml.write_text(table_toml.read_text() + '[jackpot]\nenabled = true\nlink = "bank-a"\n')
    lines = [x for x in render(load(table_toml, bridge_toml)).splitlines() if "progressive" in x]
    assert lines == ["topic meter in 1 casino/S1/table/T1/progressive/ casino/S1/progressive/bank-a/"]
    table_toml.write_text(table_toml.read_text().replace("bank-a", "bank a/#"))  # a topic injection
    with pytest.raises(BridgeConfigError, match="link"):
        load(table_toml, bridge_toml)


@pytest.mark.parametrize(
    "table_text",
    [
        'table = "T1"\n',
        '[table]\nid = "T1"\nsite = "S1"\n[mqtt]\n',
        'mqtt = 3\n[table]\nid = "T1"\nsite = "S1"\n',
    ],
)
def test_a_table_configuration_of_the_wrong_shape_is_refused_in_one_line(tmp_path, table_text):
    """``[table]`` or ``[mqtt]`` not a section was an AttributeError from ``load`` (issue 31, found by mypy)."""
    table_toml, bridge_toml = write_configs(tmp_path, [8883], ca="ca.crt")
    table_toml.write_text(table_text)
    if "[mqtt]" in table_text:  # the well-formed one: loads
        assert load(table_toml, bridge_toml).prefix == "casino/S1/table/T1"
        return
    with pytest.raises(BridgeConfigError, match=r"\[table\] and \[mqtt\] must be sections"):
        load(table_toml, bridge_toml)


def test_events_published_while_the_floor_is_down_reach_it_afterwards_in_order(tmp_path):
    floor = Broker.start(tmp_path / "floor", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1")
    table_toml, bridge_toml = write_configs(tmp_path, [floor.port], insecure_no_tls=True)
    section = render(load(table_toml, bridge_toml)).splitlines()
    table_broker = Broker.start(tmp_path / "table", users=FLOOR_USERS, site="S1", extra_config=tuple(section))
    topics = Topics("S1", "T1")
    rec = Recorder(floor, "monitor", topics, filters=("events/#",), persistent=True, v5=False, validate=False)
    table = None
    try:
        rec.start()
        table = StandInTable(table_broker.host, table_broker.port, "S1", "T1")
        for i in range(10):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        rec.wait_for(lambda m: len(m) >= 10)
        floor.stop()  # the uplink's far end is gone; the table keeps dealing
        for i in range(10, 200):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()  # the TABLE broker acked every one: they are queued there
        floor.restart()
        rec.wait_for(lambda m: len({json.loads(p)["event_id"] for _, p, _ in m}) >= 200, timeout=60)
        ids = rec.event_ids("events/")
        first_seen = list(dict.fromkeys(ids))
        assert first_seen == list(range(1, 201)), "lost or out of order"
        # a supervisor command published on the floor reaches the table through the bridge
        got = threading.Event()
        table.client.message_callback_add(f"{table.prefix}/cmd/supervisor", lambda c, u, m: got.set())
        table.client.subscribe(f"{table.prefix}/cmd/supervisor", qos=1)
        sup = Recorder(floor, "supervisor1", topics, filters=(), validate=False).start()
        wait_until(lambda: (sup.publish("cmd/supervisor", b'{"probe": 1}') is not None) and got.wait(0.5), 30,
                   "command over the bridge")  # fmt: skip
        sup.stop()
    finally:
        if table is not None:
            table.close()
        rec.stop()
        table_broker.stop()
        floor.stop()


def test_the_bridge_fails_over_to_the_second_floor_broker(tmp_path):
    """The primary floor broker is unreachable: the table's events reach the second one listed."""
    from tablebench.broker import free_port

    floor2 = Broker.start(tmp_path / "floor2", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1")
    table_toml, bridge_toml = write_configs(tmp_path, [free_port(), floor2.port], insecure_no_tls=True)
    section = render(load(table_toml, bridge_toml)).splitlines()
    table_broker = Broker.start(tmp_path / "table", users=FLOOR_USERS, site="S1", extra_config=tuple(section))
    rec = Recorder(floor2, "monitor", Topics("S1", "T1"), filters=("events/#",), validate=False)
    table = None
    try:
        rec.start()
        table = StandInTable(table_broker.host, table_broker.port, "S1", "T1")
        for i in range(5):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        rec.wait_for(lambda m: len({json.loads(p)["event_id"] for _, p, _ in m}) == 5, timeout=60)
    finally:
        if table is not None:
            table.close()
        rec.stop()
        table_broker.stop()
        floor2.stop()


def test_a_bridge_naming_both_floor_brokers_fails_over_when_the_first_is_killed(tmp_path):
    """The standby floor server (issue 45, docs/floor.md "The standby floor server"): ``hosts`` names both
    floor brokers; the primary's broker is SIGKILLed while the table deals. The bridge connects to the second,
    and every event reaches the floor: what the first broker did not get, the second does (the table broker
    queued it), none lost."""
    floor1 = Broker.start(tmp_path / "floor1", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1")
    floor2 = Broker.start(tmp_path / "floor2", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1")
    table_toml, bridge_toml = write_configs(tmp_path, [floor1.port, floor2.port], insecure_no_tls=True)
    section = render(load(table_toml, bridge_toml)).splitlines()
    assert f"address 127.0.0.1:{floor1.port} 127.0.0.1:{floor2.port}" in section  # both, the primary first
    assert "round_robin true" in section
    table_broker = Broker.start(tmp_path / "table", users=FLOOR_USERS, site="S1", extra_config=tuple(section))
    topics = Topics("S1", "T1")
    rec1 = Recorder(floor1, "monitor", topics, filters=("events/#",), validate=False)
    rec2 = Recorder(floor2, "monitor", topics, filters=("events/#",), validate=False)
    table = None
    try:
        rec1.start()
        rec2.start()
        table = StandInTable(table_broker.host, table_broker.port, "S1", "T1")
        for i in range(10):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        rec1.wait_for(lambda m: len({json.loads(p)["event_id"] for _, p, _ in m}) == 10, timeout=60)
        assert rec2.event_ids("events/") == []  # the first broker while it lives
        floor1.kill()  # the primary floor server dies
        for i in range(10, 60):
            table.publish("events/round", "round", {"round_id": f"r{i}", "phase": "betting"})
        table.flush()
        rec2.wait_for(
            lambda m: {json.loads(p)["event_id"] for _, p, _ in m} >= set(range(11, 61)), timeout=90
        )
        assert set(rec1.event_ids("events/")) | set(rec2.event_ids("events/")) == set(range(1, 61))
    finally:
        if table is not None:
            table.close()
        rec1.stop()
        rec2.stop()
        table_broker.stop()
        floor1.stop()
        floor2.stop()
