"""The floor broker's shipped ACL (issue 25), against a real mosquitto rendered from firmware_configs/mosquitto/acl
for the floor: EVERY floor account publishes to EVERY topic class of two tables, and subscribes to everything.
What each account may write and read is spelled out here, independently of the template: a table's bridge writes
only its own table's reports and responses and reads only its own commands; the archive reads the reports and its
own re-fetch answers and writes only ``cmd/replay``; supervisors (the dashboard) write only ``cmd/supervisor``;
nobody else writes what a table reports. On the old floor (no ACL) every cell was allowed."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.broker import BrokerKind, floor_role_of, render_acl
from controller.broker import main as broker_main
from tablebench.broker import Broker
from tests.support.floor import wait_until

SITE = "S1"
TABLES = ("T1", "T2")
BRIDGES = {"T1": "table-T1", "T2": "bridge-T2"}  # both names of a table's bridge account
ACCOUNTS = {
    **{user: f"pw-{user}" for user in BRIDGES.values()},
    "archive": "pw-archive",
    "supervisor-floor": "pw-supervisor-floor",
    "dashboard": "pw-dashboard",
    "supervisor1": "pw-supervisor1",
    "technician": "pw-technician",
    "monitor": "pw-monitor",
    "dealer": "pw-dealer",
}
SUPERVISORS = ("supervisor-floor", "dashboard", "supervisor1")
LINKS = {
    "progressive-bank-a": "pw-bank-a",
    "progressive-bank-b": "pw-bank-b",
}  # linked progressives' controllers
PASSWORDS = ACCOUNTS | LINKS
REPORTS = ("status", "state/table", "events/card", "alerts/open", "audit/checkpoint", "link/uptime")
COMMANDS = ("cmd/dealer", "cmd/supervisor", "cmd/technician", "cmd/replay")
RESPONSES = tuple(
    [
        "cmd/supervisor/response",
        "cmd/technician/response",
    ]  # the fallback (no response topic): nobody reads it
    + [f"cmd/supervisor/response/{s}" for s in SUPERVISORS]
    + ["cmd/replay/response/archive", "cmd/technician/response/technician", "cmd/dealer/response/dealer"]
)
CLASSES = REPORTS + COMMANDS + RESPONSES


def may_write(user: str, table: str, rel: str) -> bool:
    if user == BRIDGES[table]:
        return rel in REPORTS or rel in RESPONSES
    if user in BRIDGES.values():
        return False  # another table's bridge: nothing of this table
    return {
        "archive": rel == "cmd/replay",
        "technician": rel == "cmd/technician",
        "monitor": False,
        "dealer": False,
    }.get(user, user in SUPERVISORS and rel == "cmd/supervisor")


def may_read(user: str, table: str, rel: str) -> bool:
    if user == BRIDGES[table]:
        return rel in ("cmd/supervisor", "cmd/technician", "cmd/replay", "audit/checkpoint")
    if user in BRIDGES.values() or user == "dealer":
        return False
    if user in ("archive", "monitor"):
        return rel in REPORTS or (user == "archive" and rel == "cmd/replay/response/archive")
    role = "technician" if user == "technician" else "supervisor"
    return rel in ("status", "state/table", "alerts/open", "link/uptime", f"cmd/{role}/response/{user}")


class Account:
    def __init__(self, broker: Broker, user: str) -> None:
        self.user = user
        self.got: list[tuple[str, str]] = []  # (publisher, topic) of each message received
        self.pubacks: dict[int, bool] = {}  # mid -> accepted
        self._cond = threading.Condition()
        ready = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=f"acl-{user}-{uuid.uuid4().hex[:6]}", protocol=mqtt.MQTTv5
        )
        self.client.username_pw_set(user, PASSWORDS[user])
        self.client.on_connect = lambda c, u, f, r, p: c.subscribe("#", qos=1)
        self.client.on_subscribe = lambda c, u, m, r, p: ready.set()
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.client.connect(broker.host, broker.port, 30)
        self.client.loop_start()
        assert ready.wait(15), f"{user} could not connect"

    def _on_message(self, client, userdata, msg) -> None:
        with self._cond:
            self.got.append((json.loads(msg.payload)["by"], msg.topic))
            self._cond.notify_all()

    def _on_publish(self, client, userdata, mid, reason, properties) -> None:
        with self._cond:
            self.pubacks[mid] = not reason.is_failure
            self._cond.notify_all()

    def publish(self, topic: str, by: str | None = None) -> int:
        info = self.client.publish(topic, json.dumps({"by": by or self.user}), qos=1)
        return info.mid

    def wait(self, pred, what: str) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: pred(self), 30), f"{self.user}: timed out waiting for {what}"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def floor(tmp_path) -> Iterator[Broker]:
    broker = Broker.start(
        tmp_path / "floor", users=ACCOUNTS, acl=BrokerKind.FLOOR, site=SITE, persistence=False
    )
    yield broker
    broker.stop()


def test_rendered_roles_of_the_floor_accounts():
    """Each account's role and table from its name; "supervisor-floor" is every table, not a table "floor"."""
    assert floor_role_of("table-T1") == ("floor-bridge", "T1")
    assert floor_role_of("bridge-T2") == ("floor-bridge", "T2")
    assert floor_role_of("supervisor-floor") == ("floor-supervisor", "+")
    assert floor_role_of("dashboard") == ("floor-supervisor", "+")
    assert floor_role_of("archive-a1") == ("floor-archive", "a1")
    assert floor_role_of("dealer") == ("floor-dealer", "+")
    assert floor_role_of("progressive-bank-a") == ("floor-progressive", "bank-a")
    acl = render_acl(list(ACCOUNTS), site=SITE, kind=BrokerKind.FLOOR)
    assert "/table/floor/" not in acl and "casino/+/" not in acl  # every rule names the floor's site
    dealer = acl.split("user dealer\n", 1)[1].split("\nuser ", 1)[0]
    assert "topic" not in dealer  # the dealer has nothing on the floor


def test_the_production_render_writes_the_floor_acl(tmp_path):
    """``python -m controller.broker render --floor``: the floor broker's files, as the installer writes them."""
    users = tmp_path / "floor-users.toml"
    users.write_text("[users]\n" + "".join(f'"{u}" = "{p}"\n' for u, p in ACCOUNTS.items()))
    out = tmp_path / "etc"
    assert broker_main(["render", "--floor", "--users", str(users), "--site", SITE, "--out", str(out)]) == 0
    assert (out / "acl").read_text() == render_acl(list(ACCOUNTS), site=SITE, kind=BrokerKind.FLOOR)
    assert "user bridge-T2\ntopic write casino/S1/table/T2/status\n" in (out / "acl").read_text()


def test_every_floor_account_against_every_topic_class(floor):
    accounts = {user: Account(floor, user) for user in ACCOUNTS}
    try:
        sent: dict[tuple[str, str], int] = {}
        for user, acc in accounts.items():
            for table in TABLES:
                for rel in CLASSES:
                    topic = f"casino/{SITE}/table/{table}/{rel}"
                    sent[(user, topic)] = acc.publish(topic)
        for user, acc in accounts.items():
            mids = {mid for (u, _), mid in sent.items() if u == user}
            acc.wait(lambda a, mids=mids: mids <= a.pubacks.keys(), "every PUBACK")
        # a fence each reader can read after everything above was processed (mosquitto keeps order per client)
        fence = f"casino/{SITE}/table/T1/status"
        accounts["table-T1"].publish(fence, by="fence")
        for user, acc in accounts.items():
            if may_read(user, "T1", "status"):
                acc.wait(lambda a: ("fence", fence) in a.got, "the fence")
        wait_until(lambda: all(len(a.pubacks) == len(CLASSES) * 2 + (a.user == "table-T1") for a in
                               accounts.values()), 10, "the fence's PUBACK")  # fmt: skip
        wrong: list[str] = []
        for (user, topic), mid in sent.items():
            table, rel = topic.split("/", 4)[3], topic.split("/", 4)[4]
            if accounts[user].pubacks[mid] != may_write(user, table, rel):
                wrong.append(f"{user} write {topic}: broker said {accounts[user].pubacks[mid]}")
        for reader, acc in accounts.items():
            got = set(acc.got) - {("fence", fence)}
            expected = {
                (writer, topic)
                for (writer, topic) in sent
                if may_write(writer, topic.split("/")[3], topic.split("/", 4)[4])
                and may_read(reader, topic.split("/")[3], topic.split("/", 4)[4])
            }
            wrong += [f"{reader} read {t} (from {w}): refused" for w, t in sorted(expected - got)]
            wrong += [f"{reader} read {t} (from {w}): allowed" for w, t in sorted(got - expected)]
        assert not wrong, "\n".join(wrong)
        # the matrix is not empty either way: each account may do something and is refused something
        for user in ACCOUNTS:
            cells = [may_write(user, t, r) or may_read(user, t, r) for t in TABLES for r in CLASSES]
            assert (user == "dealer" or any(cells)) and not all(cells)
    finally:
        for acc in accounts.values():
            acc.close()


def test_only_a_links_controller_writes_its_meter_and_the_tables_read_it(tmp_path):
    """Issue 40: ``progressive-<link>`` writes ``casino/S1/progressive/<link>/#`` and nothing else (not another
    link's meter, not a table's events); the table bridges, supervisors and monitors read the meters; a bridge that
    forges a meter is refused."""
    broker = Broker.start(
        tmp_path / "floor", users=PASSWORDS, acl=BrokerKind.FLOOR, site=SITE, persistence=False
    )
    users = ("progressive-bank-a", "progressive-bank-b", "table-T1", "supervisor-floor", "monitor", "archive")
    accounts = {u: Account(broker, u) for u in users}
    try:
        topics = [f"casino/{SITE}/progressive/bank-a/meter", f"casino/{SITE}/progressive/bank-b/meter",
                  f"casino/{SITE}/table/T1/events/jackpot"]  # fmt: skip
        sent = {(u, t): acc.publish(t) for u, acc in accounts.items() for t in topics}
        for u, acc in accounts.items():
            mids = {mid for (w, _), mid in sent.items() if w == u}
            acc.wait(lambda a, mids=mids: mids <= a.pubacks.keys(), "every PUBACK")
        allowed = {(u, t) for (u, t), mid in sent.items() if accounts[u].pubacks[mid]}
        assert allowed == {
            ("progressive-bank-a", topics[0]), ("progressive-bank-b", topics[1]), ("table-T1", topics[2])
        }  # fmt: skip
        for reader in ("table-T1", "supervisor-floor", "monitor"):
            accounts[reader].wait(lambda a: {("progressive-bank-a", topics[0]), ("progressive-bank-b", topics[1])}
                                  <= set(a.got), "both meters")  # fmt: skip
        assert not any(t.startswith(f"casino/{SITE}/progressive/") for _, t in accounts["archive"].got)
    finally:
        for acc in accounts.values():
            acc.close()
        broker.stop()
