"""The floor across real network boundaries (issue 18): three table hosts and the floor as Linux network
namespaces joined by veth pairs. Each table host (its own namespace) runs its own mosquitto with the bridge
``controller.mqtt.floor_bridge`` renders and a stand-in table publisher (``tests/support/floor_standin.py``: events,
state/software, signed checkpoints and answers to re-fetch requests; a stand-in, so that the test controls the
traffic). The floor host is the root namespace (floor broker, two archive workers, PostgreSQL on
the host, an independent consumer). While the tables publish, table 1's uplink is cut, the floor broker
restarts, an archive worker is killed and comes back, and the uplink heals. Then every event of each table is in
PostgreSQL exactly once, gapless; the independent consumer saw them in order; the checkpoints chain.

The cut lasts ``FLOOR_HIL_CUT_S`` seconds (default 4 to keep the suite fast; the issue's figure is 30).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from controller.broker import BrokerKind
from controller.cli import main as tablectl
from controller.client import TableClient
from controller.mqtt.floor_bridge import BridgeConfig, render
from floor.archive.contact import CONTACT_STALE_S, contacts
from floor.archive.enrol import set_trust_on_first_use
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.messages import TableRef
from floor.reports.coverage import coverage
from tablebench.broker import Broker
from tablebench.postgres import admin_dsn
from tablebench.stack import DEMO_PINS, SERVICE, Stack, StackOptions
from tests.support.broker import Recorder
from tests.support.floor import FLOOR_USERS, temp_database, wait_until

ROOT = Path(__file__).resolve().parents[1]
CUT_S = float(os.environ.get("FLOOR_HIL_CUT_S", "40"))
EVENTS = 400
FLOOR_QUEUE = 50  # the floor broker's max_queued_messages here: outages outlast it on purpose
KEEPALIVE = 5  # the bridges' keepalive (bridge.toml keepalive): a dead link shows within 1.5x
pytestmark = [
    pytest.mark.hil,
    pytest.mark.timeout(240),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip(8)"),
]


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


class TableHost:
    """One table host: a namespace, a veth to the floor, a mosquitto with the floor bridge, a publisher."""

    def __init__(
        self, tag: str, i: int, net: int, workdir: Path, floor_port: int, prefix: str = "rp",
        link: str | None = None, pit: bool = False, users: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.ns, self.host_if, self.peer_if = f"{prefix}{tag}t{i}", f"{prefix}{tag}h{i}", f"{prefix}{tag}p{i}"
        self.table = f"T{i}"
        self.floor_ip, self.ip = f"10.{net}.{i}.1", f"10.{net}.{i}.2"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.peer_if)
        sh("ip", "link", "set", self.peer_if, "netns", self.ns)
        sh("ip", "addr", "add", f"{self.floor_ip}/30", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        for cmd in (["ip", "addr", "add", f"{self.ip}/30", "dev", self.peer_if],
                    ["ip", "link", "set", self.peer_if, "up"], ["ip", "link", "set", "lo", "up"]):  # fmt: skip
            sh("ip", "netns", "exec", self.ns, *cmd)
        self.pit_ip: str | None = None
        # pit: a second veth, the pit's own wire (the test reaches the table broker on it while the uplink is cut)
        if pit:
            self.pit_if, self.pit_ip = f"{prefix}{tag}m{i}", f"10.{net}.{100 + i}.2"
            sh("ip", "link", "add", self.pit_if, "type", "veth", "peer", "name", f"{prefix}{tag}n{i}")
            sh("ip", "link", "set", f"{prefix}{tag}n{i}", "netns", self.ns)
            sh("ip", "addr", "add", f"10.{net}.{100 + i}.1/30", "dev", self.pit_if)
            sh("ip", "link", "set", self.pit_if, "up")
            for cmd in (["ip", "addr", "add", f"{self.pit_ip}/30", "dev", f"{prefix}{tag}n{i}"],
                        ["ip", "link", "set", f"{prefix}{tag}n{i}", "up"]):  # fmt: skip
                sh("ip", "netns", "exec", self.ns, *cmd)
        self.dir = workdir / self.ns
        self.dir.mkdir(parents=True)
        bridge = BridgeConfig(
            site="S1", table_id=self.table, prefix=f"casino/S1/table/{self.table}",
            hosts=(f"{self.floor_ip}:{floor_port}",), username=f"table-{self.table}",
            password=FLOOR_USERS[f"table-{self.table}"], ca=None, keepalive=KEEPALIVE, link=link,
        )  # fmt: skip
        # users: the shipped table broker (its ACL, these accounts), listening on the pit's wire
        if users is not None and self.pit_ip:
            conf = Broker(self.dir, host=self.pit_ip, port=1883, users=users, acl=BrokerKind.TABLE, tls=None,
                          persistence=True, extra_config=tuple(render(bridge).splitlines()), site="S1",
                          )._write_config()  # fmt: skip
        else:
            conf = self.dir / "mosquitto.conf"
            conf.write_text(
                "per_listener_settings false\nallow_anonymous true\npersistence true\n"
                f"persistence_location {self.dir}/\nautosave_interval 1\nuser root\n"
                f"log_dest file {self.dir}/mosquitto.log\nlog_type all\nlistener 1883 127.0.0.1\n"
                + render(bridge)
            )
        self.broker = subprocess.Popen(["ip", "netns", "exec", self.ns, "mosquitto", "-c", str(conf)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        self.publisher: subprocess.Popen[str] | None = None

    def publish(self, events: int, rate: float, expired: list[int] = (), lost_tail: int = 0) -> None:
        self.publisher = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, "-m", "tests.support.floor_standin", "--site", "S1",
             "--table", self.table, "--events", str(events), "--rate", str(rate),
             "--expired", ",".join(map(str, expired)), "--dump", str(self.dir / "kept.txt"),
             "--lost-tail", str(lost_tail)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def published(self, timeout: float = 120) -> int:
        assert self.publisher is not None and self.publisher.stdout is not None
        line = self.publisher.stdout.readline()
        assert line.startswith("published "), f"{self.table} publisher: {line!r}"
        return int(line.split()[1])

    def kept(self) -> dict[int, bytes]:
        """What the stand-in table keeps, byte for byte (written before it printed ``published``)."""
        lines = (self.dir / "kept.txt").read_text().split()
        return {int(i): bytes.fromhex(h) for i, h in zip(lines[::2], lines[1::2], strict=True)}

    def link(self, up: bool) -> None:
        sh("ip", "link", "set", self.host_if, "up" if up else "down")

    def close(self) -> None:
        for proc in (self.publisher, self.broker):
            if proc is not None and proc.poll() is None:
                if proc.stdin:
                    proc.stdin.close()
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
        if self.pit_ip:
            subprocess.run(["ip", "link", "del", self.pit_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


def test_three_tables_lose_nothing_they_keep_through_every_outage(tmp_path):
    """Through the rendered bridges, while three tables publish: table 1's uplink cut (the floor shows it out of
    reach within 1.5 bridge keepalives), the floor broker SIGKILLed mid-stream three times, both archive workers
    down far longer than the floor broker's (deliberately small) queue, the archive's database refusing
    connections. Afterwards every event each table keeps is in PostgreSQL once, byte for byte; the events past a
    table's retention (never delivered) are named in ``event_missing`` and nothing else is."""
    tag, net = uuid.uuid4().hex[:4], random.randint(100, 250)
    expired = {2: [37, 38]}  # table 2: never delivered and no longer kept
    with temp_database() as dsn:
        floor = Broker.start(tmp_path / "floor", users=FLOOR_USERS, acl=BrokerKind.FLOOR, site="S1", host="0.0.0.0",
                             extra_config=(f"max_queued_messages {FLOOR_QUEUE}",))  # fmt: skip
        hosts: list[TableHost] = []
        workers: list[ArchiveWorker] = []

        def archive(name: str) -> ArchiveWorker:
            cfg = ArchiveConfig(dsn, "127.0.0.1", floor.port, "archive", FLOOR_USERS["archive"], worker=name,
                                grace=1.0, answer_timeout=3.0, refetch_chunk=FLOOR_QUEUE)  # fmt: skip
            return ArchiveWorker(cfg).start(timeout=30)

        try:
            workers = [archive("w1"), archive("w2")]
            with psycopg.connect(dsn) as conn:  # the stand-ins make their keys in their own processes
                for i in (1, 2, 3):
                    set_trust_on_first_use(conn, TableRef("S1", f"T{i}"), True)
            hosts = [TableHost(tag, i, net, tmp_path, floor.port) for i in (1, 2, 3)]
            for h in hosts:  # table 3's last events are lost on the way and it is idle after them (issue 36)
                h.publish(
                    EVENTS,
                    rate=20,
                    expired=expired.get(int(h.table[1:]), []),
                    lost_tail=3 * (h.table == "T3"),
                )
            wait_until(lambda: len(stored_ids(dsn, "T1")) >= 10, 30, "table 1 reaching the floor")
            wait_until(lambda: link_of(dsn, "T1") == "up", 30, "table 1's bridge notice")
            for _ in range(3):  # the floor broker crashes mid-stream, three times
                floor.kill()
                time.sleep(0.5)
                floor.restart()
                time.sleep(1.0)
            for w in workers:  # every archive worker down for longer than the floor broker's queue lasts
                w.kill()
            time.sleep(4 * FLOOR_QUEUE / (3 * 20) + 1)
            with psycopg.connect(admin_dsn(), autocommit=True) as admin:  # and the database goes away
                name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
                workers = [archive("w1"), archive("w2")]  # they come back; then the database refuses them
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
                )
                time.sleep(3)
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            hosts[0].link(False)  # table 1's uplink cut: it keeps publishing into its own broker
            cut = time.monotonic()
            # out of reach on the floor within 30 s of the cut, (nothing else tells: no notice
            # from a bridge that cannot reach the floor; the heartbeat stops): nothing for CONTACT_STALE_S
            wait_until(lambda: not reachable(dsn, "T1"), CONTACT_STALE_S + 15, "table 1 shown out of reach")
            assert time.monotonic() - cut < CONTACT_STALE_S + 15
            assert reachable(dsn, "T2") and reachable(dsn, "T3")
            with psycopg.connect(dsn) as conn:  # and no figure of it says "complete" meanwhile (issue 36)
                cov = coverage(conn, None, None, "T1")[("S1", "T1")]
            assert not cov.complete and "out of reach since" in cov.summary(), cov.summary()
            time.sleep(max(0.0, CUT_S - (time.monotonic() - cut)))  # the cut lasts, on purpose
            hosts[0].link(True)  # heal
            last = [h.published() for h in hosts]
            for h, top in zip(hosts, last, strict=True):
                gone = expired.get(int(h.table[1:]), [])
                want = [i for i in range(1, top + 1) if i not in gone]
                # the cut table's bridge has twice stayed silent for over two minutes after the heal (cause not
                # found: docs/floor.md, failure table); what is asked here is that it catches up with no operator
                # action, so it gets four minutes, the others two
                bound = 240 if h is hosts[0] else 120
                try:
                    wait_until(lambda h=h, want=want: stored_ids(dsn, h.table) == want, bound, "archived")
                except AssertionError:
                    with psycopg.connect(dsn) as conn:
                        asked = conn.execute(
                            "SELECT from_event_id, to_event_id, ok, sent, reason, answered_at"
                            " FROM replay_requests WHERE table_id = %s ORDER BY sent_at",
                            (h.table,),
                        )
                        detail = asked.fetchall()[-6:]
                        marks = conn.execute(
                            "SELECT contiguous_to, known_to FROM floor_tables WHERE table_id = %s", (h.table,)
                        ).fetchone()
                    lost = sorted(set(want) - set(stored_ids(dsn, h.table)))
                    raise AssertionError(f"{h.table}: not archived {lost[:20]} ({len(lost)} of {top}), marks {marks};"
                                         f" asked {detail}") from None  # fmt: skip
                kept = h.kept()
                with psycopg.connect(dsn) as conn:
                    raw = dict(
                        conn.execute("SELECT event_id, raw FROM events WHERE table_id = %s", (h.table,))
                    )
                    dupes = conn.execute("SELECT count(*) - count(DISTINCT event_id) FROM events"
                                         " WHERE table_id = %s", (h.table,)).fetchone()[0]  # fmt: skip
                differing = [i for i in want if bytes(raw[i]) != kept[i]]
                assert (len(want) - len(raw), dupes, differing) == (0, 0, []), (
                    h.table
                )  # missing, dup, changed
            wait_until(
                lambda: missing_ids(dsn) == {("T2", i) for i in expired[2]}, 30, "the expired ids named"
            )
            with psycopg.connect(dsn) as conn:
                alerts = conn.execute(
                    "SELECT table_id, details FROM floor_alerts WHERE kind = 'event_missing'"
                )
                named = [
                    (t, i) for t, d in alerts for i in d["event_ids"]
                ]  # re-fetched in chunks: 1 or 2 alerts
                assert sorted(named) == [("T2", i) for i in expired[2]]
            wait_until(lambda: reachable(dsn, "T1"), 60, "table 1 back in reach")
            # every event up to a table's last checkpoint proven by its chain (T2's just below its expired ids
            # cannot be: its chain is cut there)
            for t in ("T1", "T3"):
                wait_until(lambda t=t: unproven(dsn, t) == 0, 60, f"{t}: events proven")
            with psycopg.connect(dsn) as conn:
                assert conn.execute("SELECT count(*) FROM quarantined_events").fetchone()[0] == 0
            # no warning left saying a table does not answer, once everything is archived (issue 36)
            wait_until(lambda: open_warnings(dsn) == [], 30, "no stale replay_unanswered warning")
        finally:
            for w in workers:
                w.stop()
            for h in hosts:
                h.close()
            floor.stop()


def table_journal(db: Path) -> dict[int, bytes]:
    """The envelopes the table journaled (event id -> the bytes it publishes), read from its SQLite journal."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return {
            i: p.encode() if isinstance(p, str) else p
            for i, p in conn.execute("SELECT event_id, payload FROM events")
        }


def open_warnings(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT table_id, message FROM floor_alerts WHERE kind = 'replay_unanswered'"
                            " AND acknowledged_at IS NULL").fetchall()  # fmt: skip


def known_to(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT known_to FROM floor_tables WHERE table_id = %s", (table,)).fetchone()
        return int(row[0]) if row else 0


def table_topics(db: Path) -> dict[int, str]:
    """The topic the table's journal holds for each event it published."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return dict(conn.execute("SELECT event_id, topic FROM events"))


def unproven(dsn: str, table: str) -> int:
    """Events up to the table's newest signed checkpoint that its chain has not proven (issue 25)."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM events e WHERE e.table_id = %s AND NOT e.verified AND e.event_id <= (SELECT"
            " max(c.last_event_id) FROM checkpoints c WHERE c.table_id = e.table_id AND c.signature_ok)",
            (table,),
        ).fetchone()[0]


def link_of(dsn: str, table: str) -> str | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT link FROM floor_tables WHERE table_id = %s", (table,)).fetchone()
        return row[0] if row else None


SILENT_BEFORE_CRASH_S = 8.0  # how long the floor has heard nothing from a cut table before its broker crashes


def silent_for(dsn: str, table: str) -> float:
    """Seconds since the floor last heard from ``table`` (its recorded last contact; 0 if it never did)."""
    with psycopg.connect(dsn) as conn:
        now = conn.execute("SELECT now()").fetchone()[0]
        last = next(c.last_contact_at for c in contacts(conn) if c.table.table_id == table)
    return (now - last).total_seconds() if last is not None else 0.0


def reachable(dsn: str, table: str) -> bool:
    with psycopg.connect(dsn) as conn:
        now = conn.execute("SELECT now()").fetchone()[0]
        return next(c.reachable(now) for c in contacts(conn) if c.table.table_id == table)


def missing_ids(dsn: str) -> set[tuple[str, int]]:
    with psycopg.connect(dsn) as conn:
        return {(t, i) for t, i in conn.execute("SELECT table_id, event_id FROM missing_events")}


def rec_count(rec: Recorder) -> int:
    return len(rec.messages)


def stored_ids(dsn: str, table: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute(
            "SELECT event_id FROM events WHERE site = 'S1' AND table_id = %s ORDER BY event_id", (table,))]  # fmt: skip


class NamespacedStack(Stack):
    """The real table service (``tablectl run``'s, through the bench's launcher tablebench/service.py) inside a
    table host's namespace; the emulated shoe and the configuration stay on the file system both namespaces
    share (pty, unix sockets)."""

    ns = ""

    def start_controller(self) -> None:
        cmd = ["ip", "netns", "exec", self.ns, *SERVICE, "--config", str(self.config_path),
               "--gpio-control", self.gpio_socket]  # fmt: skip
        with open(self.log_path, "ab") as log:
            self.controller_proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


async def test_the_real_table_service_behind_its_own_broker_reaches_the_floor_and_obeys_it(tmp_path):
    """``tablectl run`` in a table namespace, its broker bridged to the floor: a supervisor on the floor opens
    the table with a signed command (through the bridge, checked by the table); with the uplink cut the shoe
    jams (the table journals and publishes the fault and its alert into its own broker); after healing, every
    event the table published is archived once and gapless, and the floor sees the jam alert."""
    from tablebench.emulator.control_client import ControlClient

    tag, net = uuid.uuid4().hex[:4], random.randint(100, 250)
    users = FLOOR_USERS
    with temp_database() as dsn:
        floor = Broker.start(tmp_path / "floor", users=users, acl=BrokerKind.FLOOR, site="S1", host="0.0.0.0")
        host = stack = worker = client = ctl = None
        try:
            worker = ArchiveWorker(ArchiveConfig(dsn, "127.0.0.1", floor.port, "archive", users["archive"],
                                                 worker="real", grace=1.0)).start(timeout=30)  # fmt: skip
            host = TableHost(tag, 4, net, tmp_path, floor.port)
            stack = NamespacedStack(tmp_path / "stack", StackOptions(table_id="T4", site="S1", jackpot=False,
                                                                     broker=("127.0.0.1", 1883)))  # fmt: skip
            stack.ns = host.ns
            stack.users = dict(users)
            stack.start_broker()  # the broker of the options: the table host's own (inside its namespace)
            stack.start_parts()
            stack.start_controller()
            assert tablectl(["floor", "enrol", "--dsn", dsn, "--site", "S1", "--table", "T4", "--manifest",
                             str(stack.workdir / "integrity.json"), "--user", "alice"]) == 0  # fmt: skip
            client = TableClient("127.0.0.1", floor.port, username="supervisor1", password=users["supervisor1"],
                                 prefix="casino/S1/table/T4", key_dir=stack.key_dir)  # fmt: skip
            await client.connect()
            try:
                await client.wait_for(lambda v: v.status == "online" and "table" in v.states, 60)
            except TimeoutError:
                raise AssertionError("table not online on the floor:\n" + stack.controller_log()) from None
            await client.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="pt-2001")
            await client.wait_for(lambda v: v.states["table"].get("session_id"), 20)
            host.link(False)  # the uplink is cut ...
            cut = time.monotonic()
            ctl = await ControlClient.connect(stack.shoe_control)
            await ctl.jam()  # ... and the shoe jams meanwhile (PT-2001 r.51)
            # ... and once the floor has heard nothing from the table for a while, the floor broker crashes and
            # comes back, twice, while the table is cut off: had the retained link "1", status and documents it
            # hands over again counted as contact (issue 36), the table would be shown out of reach only
            # CONTACT_STALE_S after a restart; it must be CONTACT_STALE_S after the last contact, which came before
            # (what crossed before the cut is stamped when it is stored: later on a loaded machine)
            await asyncio.to_thread(
                wait_until,
                lambda: silent_for(dsn, "T4") >= SILENT_BEFORE_CRASH_S,
                CONTACT_STALE_S,
                "T4 silent",
            )
            crashed = time.monotonic()
            for _ in range(2):
                floor.kill()
                await asyncio.sleep(0.5)
                floor.restart()
                await asyncio.sleep(1.0)
            # and while it is out of reach, no figure of it says "complete"
            await asyncio.to_thread(wait_until, lambda: not reachable(dsn, "T4"), 40, "T4 shown out of reach")
            out_at = time.monotonic()
            assert out_at < crashed + CONTACT_STALE_S, (
                f"out of reach {out_at - crashed:.1f} s after the floor broker's crash: a hand-over counted as contact"
            )
            out_after = out_at - cut
            assert out_after < CONTACT_STALE_S + SILENT_BEFORE_CRASH_S, (
                f"out of reach only {out_after:.1f} s after the cut"
            )
            with psycopg.connect(dsn) as conn:
                cov = coverage(conn, None, None, "T4")[("S1", "T4")]
            assert not cov.complete and "out of reach since" in cov.summary(), cov.summary()
            assert tablectl(["floor", "report", "--dsn", dsn]) == 0  # the day's figures say the same
            await asyncio.sleep(max(0.0, CUT_S - (time.monotonic() - cut)))
            assert not any(a["kind"] == "jam" for a in client.view.alerts_open)  # the floor cannot know yet
            host.link(True)
            await client.wait_for(lambda v: any(a["kind"] == "jam" for a in v.alerts_open), 90)
            top = client.view.last_event_id
            with psycopg.connect(dsn) as conn:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    ids = [r[0] for r in conn.execute(
                        "SELECT event_id FROM events WHERE table_id = 'T4' ORDER BY event_id")]  # fmt: skip
                    if ids and ids[-1] >= top and ids == list(range(1, ids[-1] + 1)):
                        break
                    await asyncio.sleep(0.2)
                assert ids == list(range(1, ids[-1] + 1)) and ids[-1] >= top, "gap or loss in the archive"
                kinds = {r[0] for r in conn.execute(
                    "SELECT data->>'fault' FROM events WHERE table_id = 'T4' AND topic = 'events/fault'")}  # fmt: skip
                assert "jam" in kinds
            # every event the table journaled (its own SQLite journal) archived once, byte for byte
            journaled = table_journal(stack.workdir / "state" / "journal.db")
            wait_until(
                lambda: set(journaled) <= set(stored_ids(dsn, "T4")), 60, "every journaled event archived"
            )
            with psycopg.connect(dsn) as conn:
                archived = {i: bytes(raw) for i, raw in conn.execute(
                    "SELECT event_id, raw FROM events WHERE table_id = 'T4'")}  # fmt: skip
            differing = [i for i, raw in journaled.items() if archived[i] != raw]
            assert differing == [], f"archived bytes differ from the table's journal: {differing[:10]}"
            wait_until(lambda: unproven(dsn, "T4") == 0, 60, "the table's events proven by its checkpoints")
            # issue 36: every event filed under the topic the table's journal holds for it (re-fetched or not),
            # the floor knows the table's newest id (its head), nothing left complete-but-wrong or warned
            topics = table_topics(stack.workdir / "state" / "journal.db")
            with psycopg.connect(dsn) as conn:
                filed = dict(
                    conn.execute("SELECT event_id, topic FROM events WHERE table_id = 'T4'").fetchall()
                )
                assert {i: filed.get(i) for i in topics} == topics
                stale = conn.execute("SELECT count(*) FROM floor_alerts WHERE kind = 'replay_unanswered'"
                                     " AND acknowledged_at IS NULL").fetchone()[0]  # fmt: skip
                assert stale == 0
            wait_until(
                lambda: known_to(dsn, "T4") >= max(topics), 30, "the table's newest id known (its head)"
            )
            wait_until(lambda: reachable(dsn, "T4"), 60, "T4 back in reach")
            with psycopg.connect(dsn) as conn:
                cov = coverage(conn, None, None, "T4")[("S1", "T4")]
            assert cov.complete, cov.summary()
        finally:
            if ctl is not None:
                await ctl.close()
            if client is not None:
                await client.close()
            if stack is not None:
                stack.stop()
            if host is not None:
                host.close()
            if worker is not None:
                worker.stop()
            floor.stop()
