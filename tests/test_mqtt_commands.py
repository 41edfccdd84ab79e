"""Command intake: broker ACL + controller Ed25519 signatures; refused commands never reach the handler."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from support.broker import Recorder, link_config, new_topics

from controller.journal.store import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, CredentialStore, NonceStore
from controller.mqtt.commands import CommandIntake, CommandRejected, CommandRequest
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.schemas import MessageInvalid, check
from controller.mqtt.signed_command import build_command
from controller.mqtt.userkeys import public_key_hex
from tablebench.broker import Broker

NOW = 1_800_000_000
KEYS = {"alice": Ed25519PrivateKey.generate(), "tom": Ed25519PrivateKey.generate()}
CREDS = CredentialStore.from_dict(
    {
        "users": {
            "alice": {"roles": ["supervisor"], "public_key": public_key_hex(KEYS["alice"])},
            "tom": {"roles": ["technician"], "public_key": public_key_hex(KEYS["tom"])},
        }
    }
)


class Table:
    """Stands in for the table controller's handler: records calls, commits a record like the real one."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.calls: list[CommandRequest] = []

    async def handle(self, req: CommandRequest) -> dict[str, Any]:
        self.calls.append(req)
        if req.action == "lock_lid":
            raise CommandRejected("lid already locked")
        with self.journal.transaction() as tx:
            tx.append("command", {"action": req.action, "user": req.user})
        return {"done": req.action}


def make_intake(
    db: Path, clock=lambda: NOW, link: MqttLink | None = None
) -> tuple[CommandIntake, Table, Journal]:
    journal = Journal(db, table_id="T1", clock=lambda: float(clock()))
    table = Table(journal)
    alerts = AlertManager(journal, clock=lambda: float(clock()))
    auth = Authenticator(CREDS, NonceStore(journal), site="S1", table="T1", window_s=30)
    return (
        CommandIntake(handler=table.handle, auth=auth, alerts=alerts, link=link, clock=clock),
        table,
        journal,
    )


def signed(user: str = "alice", role: str = "supervisor", action: str = "clear_jam", **kw: Any) -> bytes:
    kw.setdefault("ts", NOW)
    return json.dumps(
        build_command(
            user, "", role, action, kw.pop("args", {}), site="S1", table="T1", private_key=KEYS[user], **kw
        )
    ).encode()


def _edit(msg: bytes, **changes: Any) -> bytes:
    return json.dumps({**json.loads(msg), **changes}).encode()


def _forge(msg: bytes) -> bytes:
    doc = json.loads(msg)
    doc["sig"] = ("0" if doc["sig"][0] != "0" else "1") + doc["sig"][1:]
    return json.dumps(doc).encode()


def open_alert_reasons(journal: Journal) -> list[str]:
    return [a.reason for a in AlertManager(journal).open_alerts if a.kind == "command_rejected"]


def refusals(journal: Journal) -> list[dict[str, Any]]:
    """The journal's detail of every refusal (the sender only read "not authorised")."""
    return [r.data for r in journal.records(kinds=("command_refused",))]


async def test_valid_supervisor_command_reaches_handler(tmp_path: Path) -> None:
    intake, table, _journal = make_intake(tmp_path / "j.db")
    resp = await intake.process("supervisor", signed(args={"alert_id": 2}, request_id="r1"))
    assert resp == {"request_id": "r1", "ok": True, "result": {"done": "clear_jam"}}
    assert table.calls == [CommandRequest("supervisor", "alice", "clear_jam", {"alert_id": 2}, "r1")]
    check("cmd_response.schema.json", resp, "response")


NOT_ENROLLED_T1 = "your key is not enrolled at table T1"
NOT_ENROLLED_CASES = {"forged_mac", "wrong_key", "altered_args", "unknown_user", "role_not_held"}


@pytest.mark.parametrize(
    ("name", "payload", "role", "reason"),
    [
        ("forged_mac", lambda: _forge(signed()), "supervisor", "bad signature"),
        ("malformed_sig", lambda: _edit(signed(), sig="Z" * 128), "supervisor", "$.sig"),
        (
            "wrong_key",
            lambda: json.dumps(
                build_command(
                    "alice",
                    "",
                    "supervisor",
                    "clear_jam",
                    {},
                    ts=NOW,
                    site="S1",
                    table="T1",
                    private_key=Ed25519PrivateKey.generate(),
                )
            ).encode(),
            "supervisor",
            "bad signature",
        ),
        (
            "altered_args",
            lambda: _edit(signed(args={"alert_id": 1}), args={"alert_id": 2}),
            "supervisor",
            "bad signature",
        ),
        ("stale", lambda: signed(ts=NOW - 31), "supervisor", "stale"),
        ("future", lambda: signed(ts=NOW + 31), "supervisor", "stale"),
        (
            "unknown_user",
            lambda: json.dumps(
                build_command(
                    "mallory",
                    "",
                    "supervisor",
                    "clear_jam",
                    {},
                    ts=NOW,
                    site="S1",
                    table="T1",
                    private_key=KEYS["alice"],
                )
            ).encode(),
            "supervisor",
            "unknown user",
        ),
        ("role_not_held", lambda: signed("tom", "supervisor", "clear_jam"), "supervisor", "does not hold"),
        (
            "wrong_topic",
            lambda: signed("alice", "supervisor", "clear_jam"),
            "technician",
            "sent on the technician",
        ),
        (
            "action_not_of_role",
            lambda: signed("tom", "technician", "void_round"),
            "technician",
            "not a technician",
        ),
    ],
)
async def test_forged_stale_and_unauthorised_commands_rejected_with_alert(
    tmp_path: Path, name: str, payload, role: str, reason: str
) -> None:
    """PT-2001 r.51: only a chief inspector (supervisor) clears a jam; anything else is refused + alerted.
    The sender reads "not authorised", or, when the signature does not verify with a key the table holds for
    that user and role, "your key is not enrolled at table T1" (or the schema error of a malformed document):
    it cannot tell an unknown user from a wrong role or a wrong key; the journal keeps the detail (issue 13 §3).
    """
    intake, table, journal = make_intake(tmp_path / "j.db")
    resp = await intake.process(role, payload())
    if name.startswith("malformed"):
        assert resp["ok"] is False and reason in resp["reason"], resp
    else:
        told = NOT_ENROLLED_T1 if name in NOT_ENROLLED_CASES else "not authorised"
        assert resp == {"request_id": resp["request_id"], "ok": False, "reason": told}, resp
    assert table.calls == []
    assert len(open_alert_reasons(journal)) == 1 and reason in open_alert_reasons(journal)[0]
    assert [reason in r["reason"] for r in refusals(journal)] == [True]
    check("cmd_response.schema.json", resp, "response")


async def test_replay_rejected_also_after_restart(tmp_path: Path) -> None:
    msg = signed(nonce="ab" * 16)
    intake, table, journal = make_intake(tmp_path / "j.db")
    assert (await intake.process("supervisor", msg))["ok"] is True
    again = await intake.process("supervisor", _edit(msg, request_id="other"))
    assert again["ok"] is False and again["reason"] == "not authorised"
    journal.close()
    intake, table2, journal = make_intake(
        tmp_path / "j.db", clock=lambda: NOW + 20
    )  # restarted, still in window
    after = await intake.process("supervisor", _edit(msg, request_id="third"))
    assert after["ok"] is False and after["reason"] == "not authorised"
    assert len(table.calls) == 1 and table2.calls == []
    assert [r["code"] for r in refusals(journal)] == ["replayed", "replayed"]
    assert len(open_alert_reasons(journal)) == 1  # the same source again: one alert, counted
    assert AlertManager(journal).open_alerts[0].details["count"] == 2


async def test_handler_rejection_and_dealer_commands(tmp_path: Path) -> None:
    intake, table, _journal = make_intake(tmp_path / "j.db")
    r = await intake.process("supervisor", signed(action="lock_lid"))
    assert r["ok"] is False and r["reason"] == "lid already locked"
    ok = await intake.process(
        "dealer", b'{"request_id":"d1","action":"place_bet","args":{"seat":2,"amount":500}}'
    )
    assert ok["ok"] is True and table.calls[-1] == CommandRequest(
        "dealer", "dealer", "place_bet", {"seat": 2, "amount": 500}, "d1"
    )
    bad = await intake.process("dealer", b'{"request_id":"d2","action":"place_bet","args":{"seat":2}}')
    assert bad["ok"] is False and "amount" in bad["reason"] and bad["request_id"] == "d2"
    assert intake.counters.malformed == 1 and intake.counters.accepted == 1


async def test_request_id_is_not_signed(tmp_path: Path) -> None:
    """The request_id only correlates the response (docs/mqtt.md): a signed command with another valid
    request_id is accepted and answered under that id; the signed fields are what authorise it."""
    intake, table, _journal = make_intake(tmp_path / "j.db")
    r = await intake.process("supervisor", _edit(signed(), request_id="0"))
    assert r["ok"] is True and r["request_id"] == "0" and len(table.calls) == 1


def _mutations() -> st.SearchStrategy[bytes]:
    base = json.loads(signed())
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=12,
    )
    # request_id is the caller's correlation id, not signed (docs/mqtt.md): another valid one is a valid
    # command, so it is not a mutation that must be refused (test_request_id_is_not_signed).
    signed_keys = sorted(set(base) - {"request_id"})
    changes = st.tuples(st.sampled_from(signed_keys), json_values).filter(lambda kv: kv[1] != base[kv[0]])
    mutated = changes.map(lambda kv: json.dumps({**base, kv[0]: kv[1]}).encode())
    dropped = st.builds(
        lambda k: json.dumps({x: y for x, y in base.items() if x != k}).encode(),
        st.sampled_from(sorted(base)),
    )
    return st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()) | mutated | dropped


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=_mutations(), role=st.sampled_from(["supervisor", "technician", "dealer", "bogus"]))
def test_garbage_never_crashes_and_never_reaches_handler(tmp_path: Path, payload: bytes, role: str) -> None:
    """Garbage and single-field mutations of a valid signed command: always a refusal, never a call."""

    async def run() -> dict[str, Any]:
        intake, table, journal = make_intake(tmp_path / f"{uuid.uuid4().hex}.db")
        try:
            resp = await intake.process(role, payload)
            check("cmd_response.schema.json", resp, "response")
            if role == "dealer" and resp["ok"]:
                check("cmd_dealer.schema.json", json.loads(payload), "dealer")  # only a valid one may pass
            else:
                assert resp["ok"] is False and table.calls == []
            return resp
        finally:
            journal.close()

    asyncio.run(run())


# ---- over a real broker ----------------------------------------------------------------------------------


async def _controller(
    broker: Broker, db: Path, topics, clock
) -> tuple[CommandIntake, Table, Journal, MqttLink]:
    link = MqttLink(link_config(broker, reconnect_min_s=0.05), topics)
    intake, table, journal = make_intake(db, clock=clock, link=link)
    OutboxPublisher(journal, link).start()
    intake.start()
    await link.start()
    await link.wait_connected()
    return intake, table, journal, link


async def test_mqtt_v5_request_response_to_the_senders_own_topic(mqtt_broker: Broker, tmp_path: Path) -> None:
    import time

    topics = new_topics()
    intake, table, journal, link = await _controller(mqtt_broker, tmp_path / "j.db", topics, time.time)
    sup = Recorder(
        mqtt_broker, "supervisor1", topics, filters=("cmd/supervisor/response/#", "alerts/#")
    ).start()
    await asyncio.sleep(0.05)
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topics.abs("cmd/supervisor/response/supervisor1")
    props.CorrelationData = b"corr-42"
    msg = json.dumps(
        build_command(
            "alice",
            "",
            "supervisor",
            "clear_jam",
            {},
            site="S1",
            table="T1",
            private_key=KEYS["alice"],
            request_id="q1",
        )
    )
    assert sup.publish("cmd/supervisor", msg, props=props) == 0
    await sup.await_for(lambda m: any(t == "cmd/supervisor/response/supervisor1" for t, _, _ in m))
    assert sup.on("cmd/supervisor/response/supervisor1") == [
        {"request_id": "q1", "ok": True, "result": {"done": "clear_jam"}}
    ]
    # The pit terminal's account: its answers on cmd/dealer/response/dealer, malformed ones answered too.
    dealer = Recorder(mqtt_broker, "dealer", topics, filters=("cmd/dealer/response/#",)).start()
    await asyncio.sleep(0.05)
    dprops = Properties(PacketTypes.PUBLISH)
    dprops.ResponseTopic = topics.abs("cmd/dealer/response/dealer")
    dealer.publish("cmd/dealer", '{"request_id":"p1","action":"hit","args":{"seat":3}}', props=dprops)
    dealer.publish("cmd/dealer", b"\xff not json", props=dprops)
    await dealer.await_for(lambda m: len(m) >= 2)
    got = dealer.on("cmd/dealer/response/dealer")
    assert got[0] == {"request_id": "p1", "ok": True, "result": {"done": "hit"}}
    assert got[1]["ok"] is False and "not UTF-8" in got[1]["reason"]
    # A replay over MQTT (another request id, the same signed fields): refused, alert published for the floor.
    sup.publish("cmd/supervisor", _edit(msg.encode(), request_id="q2"), props=props)
    await sup.await_for(lambda m: len(sup.on("cmd/supervisor/response/supervisor1")) == 2)
    assert sup.on("cmd/supervisor/response/supervisor1")[1]["reason"] == "not authorised"
    await sup.await_for(lambda m: any(t == "alerts/open" for t, _, _ in m))
    assert sup.on("alerts/open")[-1]["data"]["alerts"][0]["kind"] == "command_rejected"
    assert [c.action for c in table.calls] == ["clear_jam", "hit"]
    assert not sup.invalid and not dealer.invalid
    for r in (sup, dealer):
        r.stop()
    await intake.stop()
    await link.stop()
    journal.close()


async def test_broker_acl_denies_dealer_on_supervisor_topic(mqtt_broker: Broker, tmp_path: Path) -> None:
    """Layer one: the broker. A dealer account cannot even publish a supervisor command (v5 PUBACK 0x87)."""
    topics = new_topics()
    intake, table, journal, link = await _controller(mqtt_broker, tmp_path / "j.db", topics, lambda: NOW)
    dealer = Recorder(mqtt_broker, "dealer", topics, filters=("cmd/#",)).start()
    monitor = Recorder(mqtt_broker, "monitor", topics, filters=("cmd/#",)).start()
    await asyncio.sleep(0.05)
    assert dealer.publish("cmd/supervisor", signed()) == 0x87  # Not authorized
    assert dealer.publish("cmd/technician", signed("tom", "technician")) == 0x87
    assert dealer.publish("alerts/open", b"{}") == 0x87
    assert monitor.publish("cmd/dealer", b"{}") == 0x87  # read-only account
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topics.abs("cmd/dealer/response/dealer")
    stand = b'{"request_id":"x","action":"stand","args":{"seat":1}}'
    assert dealer.publish("cmd/dealer", stand, props=props) == 0
    await dealer.await_for(lambda m: any(t == "cmd/dealer/response/dealer" for t, _, _ in m))
    assert [c.action for c in table.calls] == ["stand"]
    assert intake.counters.received == 1  # nothing denied by the broker ever reached the controller
    for r in (dealer, monitor):
        r.stop()
    await intake.stop()
    await link.stop()
    journal.close()


def test_controller_account_confined_to_its_own_table(mqtt_broker: Broker) -> None:
    t1 = new_topics("T1")
    other = Recorder(mqtt_broker, "table-T1", type(t1)(t1.site, "T2"), filters=()).start()
    assert other.publish("events/card", b"{}") == 0x87
    assert other.publish("status", b"online") == 0x87
    own = Recorder(mqtt_broker, "table-T1", t1, filters=()).start()
    assert own.publish("status", b"online") < 0x80  # 0x10 "no matching subscribers" is a success
    with pytest.raises(MessageInvalid):
        check("cmd_signed.schema.json", {"role": "dealer"}, "x")
    other.stop()
    own.stop()
