"""The floor's records survive losing its server (issue 45, "Done when"), across real network boundaries.

Hosts are Linux network namespaces on one switch (a bridge in the root namespace, which the test itself sits on):
- the primary floor host: PostgreSQL (WAL archived by the shipped ``tablectl-floor-wal-archive`` into a backup
  folder that outlives the host, a base backup taken by ``tablectl floor backup run``), the floor broker (the
  shipped floor ACL), an archive worker (``tablectl floor archive``);
- the standby floor host: PostgreSQL made by ``pg_basebackup -R`` through the slot ``floor_standby``, its own
  floor broker (the same accounts), an archive worker and the dashboard (``tablectl floor web``);
- three real tables (``tablectl run`` with an emulated shoe), each with its own table broker whose rendered
  bridge names BOTH floor brokers. Every floor client is given the pair's DSN (``target_session_attrs=read-write``
  and the installer's keepalive settings, docs/floor.md "Set it up").

1. While the tables deal, the primary host dies: its link dropped, then every process in it SIGKILLed. The
   standby is promoted as docs/floor.md says (``tablectl floor promote --old-primary ...`` on the standby host);
   within ``FAILOVER_BOUND_S`` of the promotion the bridges, the workers and the dashboard (an HTTP GET of its
   snapshot, read from the database) use it; every table's journal is then archived exactly once, byte for byte.
2. The archive restored to a time noted before the failover on an empty server from the base backup and the WAL
   archive (``tablectl floor restore``); an archive worker on it repairs from the tables; the same count holds and
   what came after the noted time was re-fetched from the tables.

One set of hosts and tables for both tests (a module fixture); the dealing is a few rounds a table.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from controller.broker import BrokerKind
from controller.cli import main as tablectl
from controller.mqtt.floor_bridge import BridgeConfig, render
from floor.accounts.users import Role, add_user
from floor.archive import store
from floor.backup.replication import STANDBY_SLOT
from floor.backup.server import RestoredServer, own
from hil_tests.test_floor_netns import ROOT, NamespacedStack, table_journal
from tablebench.broker import Broker
from tablebench.emulator.control_client import ControlClient
from tablebench.postgres import Postgres, wal_archived
from tablebench.stack import TABLECTL, StackOptions
from tests.support.floor import FLOOR_USERS, wait_until
from tests.test_jackpot_service import Table, scenario

SITE, DB = "S1", "floor"
TABLES = (1, 2, 3)
FAILOVER_BOUND_S = (
    60.0  # docs/floor.md "Promote the standby": bridges, workers and dashboard on the promoted one
)
KEEPALIVE = 5  # the bridges' keepalive: a dead floor broker shows within about 1.5 keepalives
WEB_USER, WEB_PASSWORD = "carol", "carol-floor-password-1"
USERS = {**FLOOR_USERS, "supervisor-floor": "demo-supervisor-floor"}
# the installer's pair DSN settings (docs/floor.md "Set it up"): a dead server given up after 3 s, a connection to
# a server gone silent dropped within about 15 s
DSN_KEEP = {"connect_timeout": "3", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
            "tcp_user_timeout": "15000"}  # fmt: skip
ARCHIVE_SCRIPT = ROOT / "systemd" / "floor" / "tablectl-floor-wal-archive"
pytestmark = [
    pytest.mark.hil,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip(8)"),
]


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def step(what: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f} s] {what}", flush=True)


T0 = time.monotonic()


class Host:
    """A namespace with one veth on the switch (``bridge`` in the root namespace), address 10.NET.0.N/24."""

    def __init__(self, prefix: str, name: str, n: int, net: int, bridge: str) -> None:
        self.ns, self.veth, peer = f"{prefix}{name}", f"{prefix}h{n}", f"{prefix}p{n}"
        self.ip = f"10.{net}.0.{n}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", peer)
        sh("ip", "link", "set", peer, "netns", self.ns)
        sh("ip", "link", "set", self.veth, "master", bridge)
        sh("ip", "link", "set", self.veth, "up")
        for cmd in (["ip", "addr", "add", f"{self.ip}/24", "dev", peer], ["ip", "link", "set", peer, "up"],
                    ["ip", "link", "set", "lo", "up"]):  # fmt: skip
            sh("ip", "netns", "exec", self.ns, *cmd)
        self.procs: list[subprocess.Popen[bytes]] = []

    def run(self, cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], stdout=out, stderr=subprocess.STDOUT,
                                    cwd=ROOT, env={**os.environ, **(env or {})})  # fmt: skip
        self.procs.append(proc)
        return proc

    def kill_all(self) -> list[int]:
        """SIGKILL every process in the namespace (a host that dies runs no shutdown code)."""
        done = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True, check=False)
        pids = [int(p) for p in done.stdout.split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        return pids

    def link(self, up: bool) -> None:
        sh("ip", "link", "set", self.veth, "up" if up else "down")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        self.kill_all()
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


def answers(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class FloorHost:
    host: Host
    pg: Postgres
    broker: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None


@dataclass
class Floor:
    """Everything the two tests share (the module fixture)."""

    workdir: Path
    backups: Path  # the backup directory: wal/ and base/ (a folder that outlives the primary host)
    primary: FloorHost
    standby: FloorHost
    tables: list[Table]
    noted: datetime  # the point in time the second test restores to
    web: str  # the dashboard's address on the standby host (host:port)
    figures: dict[str, float] = field(default_factory=dict)

    def pair(self, first: FloorHost) -> str:
        """The pair's DSN as the installer writes it on ``first``'s host: that server first."""
        second = self.standby if first is self.primary else self.primary
        return make_conninfo(host=f"{first.host.ip},{second.host.ip}", port="5432,5432", user="postgres",
                             dbname=DB, target_session_attrs="read-write", **DSN_KEEP)  # fmt: skip

    def journal(self, t: Table) -> dict[int, bytes]:
        return table_journal(t.stack.workdir / "state" / "journal.db")


def counted(dsn: str, tables: list[Table]) -> dict[str, tuple[int, int, int]]:
    """Each table's journal against the archive at ``dsn``: (missing, duplicated, differing)."""
    out = {}
    with psycopg.connect(dsn, connect_timeout=3) as conn:
        for t in tables:
            table = t.stack.opts.table_id
            journaled = table_journal(t.stack.workdir / "state" / "journal.db")
            rows = conn.execute("SELECT event_id, raw FROM events WHERE site = %s AND table_id = %s",
                                (SITE, table)).fetchall()  # fmt: skip
            archived: dict[int, bytes] = {}
            dup = 0
            for i, raw in rows:
                dup += i in archived
                archived[i] = bytes(raw)
            missing = sum(1 for i in journaled if i not in archived)
            differing = sum(1 for i, raw in journaled.items() if i in archived and archived[i] != raw)
            out[table] = (missing, dup, differing)
    return out


def diagnosis(f: Floor, dsn: str) -> str:
    """What a timed-out wait saw: the counts, the archive's re-fetches and watermarks, the logs' ends."""
    with psycopg.connect(dsn) as conn:
        asked = conn.execute("SELECT table_id, from_event_id, to_event_id, ok, sent, reason, sent_at, answered_at"
                             " FROM replay_requests ORDER BY sent_at DESC LIMIT 12").fetchall()  # fmt: skip
        marks = conn.execute("SELECT table_id, contiguous_to, known_to FROM floor_tables").fetchall()
    heads = {t.stack.opts.table_id: max(f.journal(t)) for t in f.tables}
    logs = "\n".join(
        f"--- {p.name}\n" + p.read_text(errors="replace")[-1200:]
        for p in sorted(f.workdir.glob("*-archive.log"))
    )
    replays = "\n".join(
        f"--- {t.stack.opts.table_id}: "
        + " | ".join(ln[-160:] for ln in t.stack.controller_log(400).splitlines() if "replay" in ln)[-1500:]
        for t in f.tables
    )
    bridges = "\n".join(
        f"--- {p.name}: " + " | ".join([ln[-140:] for ln in p.read_text(errors="replace").splitlines()
                                         if "ridge" in ln or "onnect" in ln][-12:])
        for p in sorted(f.workdir.glob("*t[0-9]/mosquitto.log")) + sorted(f.workdir.glob("*t[0-9].log"))
    )  # fmt: skip
    return (
        f"{counted(dsn, f.tables)} heads {heads} marks {marks}\nasked {asked}\n{logs}\n{replays}\n{bridges}"
    )


def all_archived(dsn: str, tables: list[Table]) -> bool:
    """Every id of every table's journal in the archive at ``dsn`` (the ids only: ``counted`` compares bytes)."""
    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            have = dict(conn.execute("SELECT table_id, count(DISTINCT event_id) FROM events WHERE site = %s"
                                     " GROUP BY 1", (SITE,)).fetchall())  # fmt: skip
    except psycopg.Error:
        return False
    return all(have.get(t.stack.opts.table_id, 0) >= len(table_journal(t.stack.workdir / "state" / "journal.db"))
               for t in tables)  # fmt: skip


def poll(pred: Callable[[], bool], timeout: float, what: str) -> None:
    """``wait_until`` at a gentler pace: each look reads every journal and the archive (the processes under
    test share the machine's two cores)."""
    wait_until(lambda: pred() or bool(time.sleep(0.5)), timeout, what)


async def deal_round(t: Table) -> None:
    """A bet at seat 1, dealt out with ten-value cards (tests/test_jackpot_service.py's ``finish_round``)."""
    await t.dealer.dealer("place_bet", seat=1, amount=500)
    await t.dealer.dealer("no_more_bets")
    await t.finish_round()


async def deal_rounds(t: Table, n: int) -> None:
    for _ in range(n):
        await deal_round(t)


@contextlib.asynccontextmanager
async def connected(tables: list[Table]):  # type: ignore[no-untyped-def]
    """Each table's dealer, supervisor and shoe control connected (the test's side of the pit)."""
    for t in tables:
        t.dealer, t.sup = t.stack.client("dealer"), t.stack.client("supervisor1")
        await t.dealer.connect()
        await t.sup.connect()
        t.ctl = await ControlClient.connect(t.stack.shoe_control)
    try:
        for t in tables:
            await t.until(lambda t=t: t.dealer.view.status == "online", "service online", 60)
        yield
    finally:
        for t in tables:
            for closing in (t.dealer.close(), t.sup.close(), t.ctl.close()):
                with contextlib.suppress(Exception):
                    await closing


def server_time(dsn: str) -> datetime:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def snapshot(web: str) -> dict | None:
    """The dashboard's snapshot as a logged-in supervisor reads it (a login writes a session to the database;
    the snapshot is built from it); None while the dashboard cannot answer."""
    host, _, port = web.rpartition(":")
    origin = f"https://{web}"
    conn = http.client.HTTPSConnection(host, int(port), timeout=10, context=WEB_TLS)
    try:
        body = json.dumps({"user": WEB_USER, "password": WEB_PASSWORD}).encode()
        conn.request("POST", "/api/login", body=body,
                     headers={"Content-Type": "application/json", "X-Floor": "1", "Origin": origin})  # fmt: skip
        resp = conn.getresponse()
        resp.read()
        cookies = resp.headers.get_all("Set-Cookie") or []
        if resp.status != 200 or not cookies:
            return None
        conn.request("GET", "/api/snapshot", headers={"Cookie": cookies[0].split(";", 1)[0]})
        resp = conn.getresponse()
        text = resp.read()
        return json.loads(text) if resp.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        conn.close()


WEB_TLS = ssl.create_default_context()  # trusts the dashboard's own certificate (the fixture loads it)


def dashboard_shows(web: str, heads: dict[str, int]) -> bool:
    snap = snapshot(web)
    if snap is None:
        return False
    shown = {t["table"]: t.get("archived_to") or 0 for t in snap.get("tables", [])}
    return all(shown.get(table, 0) >= head for table, head in heads.items())


def cli(*argv: str, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    """``tablectl ...`` as a technician runs it, on the host of namespace ``ns``."""
    cmd = [*(["ip", "netns", "exec", ns] if ns else []), *TABLECTL, *argv]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture(scope="module")
def floor() -> Iterator[Floor]:
    global T0
    T0 = time.monotonic()
    tag, net = uuid.uuid4().hex[:4], random.randint(100, 250)
    prefix, bridge = f"sb{tag}", f"sb{tag}br"
    workdir = Path(tempfile.mkdtemp(prefix="floor-standby-netns-"))
    own(workdir)
    workdir.chmod(0o755)
    hosts: list[Host] = []
    servers: list[Postgres] = []
    stacks: list[NamespacedStack] = []
    f: Floor | None = None
    try:
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "addr", "add", f"10.{net}.0.254/24", "dev", bridge)
        sh("ip", "link", "set", bridge, "up")
        h1, h2 = Host(prefix, "f1", 1, net, bridge), Host(prefix, "f2", 2, net, bridge)
        hosts += [h1, h2]
        # the backup directory and the archive script, the server's account's (as tests/test_floor_backup.py)
        backups = workdir / "backups"
        (backups / "wal").mkdir(parents=True)
        for d in (backups, backups / "wal"):
            own(d)
        script = workdir / ARCHIVE_SCRIPT.name
        shutil.copy2(ARCHIVE_SCRIPT, script)
        script.chmod(0o755)
        hba = workdir / "pg_hba.conf"  # the floor network may connect and replicate (a private test network)
        hba.write_text(
            "local all all trust\nhost all all 0.0.0.0/0 trust\nhost replication all 0.0.0.0/0 trust\n"
        )
        own(hba)
        common = (f"hba_file={hba}", "wal_level=replica", "max_wal_senders=4", "max_replication_slots=4")
        primary = Postgres.start(settings=(*common, "archive_mode=on",
                                           f"archive_command={script} %p {backups}/wal/%f"),
                                 host=h1.ip, netns=h1.ns)  # fmt: skip
        servers.append(primary)
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB}")
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (STANDBY_SLOT,))
        with psycopg.connect(primary.dsn(DB)) as conn:
            store.migrate(conn)
            add_user(conn, WEB_USER, Role.SUPERVISOR, WEB_PASSWORD)
        standby = Postgres.standby_of(primary, STANDBY_SLOT, "floor_standby", settings=common, host=h2.ip,
                                      netns=h2.ns)  # fmt: skip
        servers.append(standby)
        step("primary and standby servers up")
        f = Floor(workdir, backups, FloorHost(h1, primary), FloorHost(h2, standby), [], datetime.now(),
                  f"{h2.ip}:8080")  # fmt: skip
        for fh in (f.primary, f.standby):  # each floor host: its broker, an archive worker
            conf = Broker(workdir / fh.host.ns, host=fh.host.ip, port=1883, users=USERS, acl=BrokerKind.FLOOR,
                          tls=None, persistence=True, site=SITE)  # fmt: skip
            conf.workdir.mkdir()
            fh.broker = fh.host.run(
                ["mosquitto", "-c", str(conf._write_config())], workdir / f"{fh.host.ns}.log"
            )
            wait_until(lambda fh=fh: answers(fh.host.ip, 1883), 20, "a floor broker")
            fh.worker = fh.host.run(
                [*TABLECTL, "floor", "archive", "--dsn", f.pair(fh), "--host", fh.host.ip, "--port", "1883",
                 "--worker", fh.host.ns, "--grace", "1", "--no-backup-check", "--status-interval", "5"],
                workdir / f"{fh.host.ns}-archive.log", {"FLOOR_ARCHIVE_PASSWORD": USERS["archive"]},
            )  # fmt: skip
        # the dashboard on the standby host, serving HTTPS itself (a certificate for its address)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "1", "-subj", f"/CN={h2.ip}", "-addext", f"subjectAltName=IP:{h2.ip}",
                        "-keyout", "web.key", "-out", "web.crt"],
                       cwd=workdir, check=True, capture_output=True)  # fmt: skip
        WEB_TLS.load_verify_locations(workdir / "web.crt")
        f.standby.host.run([*TABLECTL, "floor", "web", "--dsn", f.pair(f.standby), "--listen", f.web,
                            "--tls-cert", str(workdir / "web.crt"), "--tls-key", str(workdir / "web.key"),
                            "--broker-host", h2.ip, "--broker-port", "1883"], workdir / "web.log",
                           {"FLOOR_WEB_PASSWORD": USERS["supervisor-floor"]})  # fmt: skip

        def table_host(i: int) -> Table:
            th = Host(prefix, f"t{i}", 10 + i, net, bridge)
            hosts.append(th)
            options = StackOptions(table_id=f"T{i}", site=SITE, scenario=scenario(), jackpot=False,
                                   broker=(th.ip, 1883))  # fmt: skip
            stack = NamespacedStack(workdir / f"stack{i}", options)
            stack.ns = th.ns
            stacks.append(stack)
            link = BridgeConfig(site=SITE, table_id=f"T{i}", prefix=stack.prefix,
                                hosts=(f"{h1.ip}:1883", f"{h2.ip}:1883"), username=f"table-T{i}",
                                password=FLOOR_USERS[f"table-T{i}"], ca=None, keepalive=KEEPALIVE)  # fmt: skip
            broker = Broker(workdir / th.ns, host=th.ip, port=1883, users=stack.users, acl=BrokerKind.TABLE,
                            tls=None, persistence=True, extra_config=tuple(render(link).splitlines()),
                            site=SITE)  # fmt: skip
            broker.workdir.mkdir()
            th.run(["mosquitto", "-c", str(broker._write_config())], workdir / f"{th.ns}.log")
            wait_until(lambda: answers(th.ip, 1883), 20, "a table broker")
            stack.start_broker()
            stack.start_parts()
            stack.start_controller()
            done = tablectl(["floor", "enrol", "--dsn", primary.dsn(DB), "--site", SITE, "--table", f"T{i}",
                             "--manifest", str(stack.workdir / "integrity.json"), "--user", "alice"])  # fmt: skip
            assert done == 0
            return Table(stack, None, None, None)  # type: ignore[arg-type]

        async def start_tables() -> None:
            f.tables += await asyncio.gather(*(asyncio.to_thread(table_host, i) for i in TABLES))
            step("tables started")
            # the base backup: before any dealing (what follows is in the WAL archive only)
            done = await asyncio.to_thread(cli, "floor", "backup", "run", "--dsn", primary.dsn(DB),
                                           "--backup-dir", str(backups))  # fmt: skip
            assert done.returncode == 0, done.stderr
            step("base backup taken")
            async with connected(f.tables):
                await asyncio.gather(*(t.load() for t in f.tables))
                await asyncio.gather(*(deal_round(t) for t in f.tables))
                await asyncio.to_thread(poll, lambda: all_archived(primary.dsn(DB), f.tables), 60,
                                        "the first round archived on the primary")  # fmt: skip
                f.noted = server_time(primary.dsn(DB))
                await asyncio.gather(
                    *(deal_round(t) for t in f.tables)
                )  # after the noted time: in the WAL only
                await asyncio.to_thread(poll, lambda: all_archived(primary.dsn(DB), f.tables), 60,
                                        "the second round archived on the primary")  # fmt: skip
            wal_archived(primary.dsn(DB))
            step("two rounds dealt, the WAL archived")

        asyncio.run(start_tables())
        yield f
    finally:
        for stack in stacks:
            stack.stop()
        for h in hosts:
            h.close()
        for server in servers:
            server.stop()
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
        if f is not None:
            print(f"figures: {json.dumps(f.figures)}")
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_primary_floor_host_dies_while_tables_deal_and_the_promoted_standby_carries_on(
    floor: Floor,
) -> None:
    """The primary host dies mid-round at every table (link dropped, every process SIGKILLed); the standby is
    promoted as docs/floor.md says; within FAILOVER_BOUND_S the bridges, workers and dashboard use it; every
    table's journal archived exactly once, byte for byte."""
    f = floor
    primary_dsn, standby_dsn = f.primary.pg.dsn(DB), f.standby.pg.dsn(DB)

    def stored(dsn: str) -> int:
        try:
            with psycopg.connect(dsn, connect_timeout=2) as conn:
                return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])  # type: ignore[index]
        except psycopg.Error:
            return -1

    async def scenario_() -> None:
        async with connected(f.tables):
            before = stored(primary_dsn)
            dealing = asyncio.gather(*(deal_rounds(t, 2) for t in f.tables))
            await asyncio.to_thread(
                wait_until, lambda: stored(primary_dsn) > before + 20, 60, "dealing under way"
            )
            # the primary host dies: its link first (no goodbye on any connection), then every process in it
            f.primary.host.link(False)
            killed = f.primary.host.kill_all()
            f.primary.pg.kill()
            step(f"primary host killed ({len(killed)} processes), dealing on")
            await dealing
            step("the round dealt with the primary gone")
            with psycopg.connect(standby_dsn) as conn:  # the standby answers, read-only, until promoted
                assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
            # promotion, as docs/floor.md "Promote the standby" step 2, on the standby host
            started = time.monotonic()
            done = cli("floor", "promote", "--dsn", f.pair(f.standby), "--old-primary", f"{f.primary.host.ip}:5432",
                       ns=f.standby.host.ns)  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            promoted = time.monotonic()
            f.figures["promote_s"] = promoted - started
            step(f"promoted: {done.stdout.strip()}")
            # nothing else changed: the tables deal on; their events come through the standby's broker (the
            # bridges), are stored by its worker on the promoted server, and the dashboard shows them
            await asyncio.gather(*(deal_round(t) for t in f.tables))
            heads = {t.stack.opts.table_id: max(f.journal(t)) for t in f.tables}
            step("a round dealt after the promotion")
            try:
                await asyncio.to_thread(poll, lambda: all_archived(standby_dsn, f.tables),
                                        FAILOVER_BOUND_S, "every journal on the promoted server")  # fmt: skip
            except AssertionError:
                raise AssertionError(
                    f"not archived on the promoted server: {diagnosis(f, standby_dsn)}"
                ) from None
            f.figures["archived_s"] = time.monotonic() - promoted
            try:
                await asyncio.to_thread(poll, lambda: dashboard_shows(f.web, heads),
                                        FAILOVER_BOUND_S, "the dashboard showing the promoted server")  # fmt: skip
            except AssertionError:
                log = (f.workdir / "web.log").read_text(errors="replace")[-1500:]
                raise AssertionError(f"dashboard: {snapshot(f.web)} want {heads}\n{log}") from None
            f.figures["dashboard_s"] = time.monotonic() - promoted
            step(f"failover figures: {f.figures}")
            assert max(f.figures["archived_s"], f.figures["dashboard_s"]) < FAILOVER_BOUND_S

    asyncio.run(scenario_())
    got = counted(standby_dsn, f.tables)
    assert got == {t.stack.opts.table_id: (0, 0, 0) for t in f.tables}, got  # missing, duplicated, differing
    with psycopg.connect(standby_dsn) as conn:  # the promoted server takes writes, the workers wrote them
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False  # type: ignore[index]
        assert conn.execute("SELECT count(*) FROM quarantined_events").fetchone()[0] == 0  # type: ignore[index]


def test_the_archive_restored_to_a_point_in_time_on_an_empty_server_is_repaired_from_the_tables(
    floor: Floor,
) -> None:
    """The floor's disk is gone: the archive restored to the noted time (after the first round) from the base
    backup and the WAL archive on an empty server; an archive worker on it (on the floor broker the bridges use)
    repairs from the tables: every journal archived once, byte for byte; everything after the noted time came
    from the tables (``source = 'replay'``)."""
    f = floor
    data = f.workdir / "restored"
    done = cli("floor", "restore", "--to", f.noted.isoformat(), "--backup-dir", str(f.backups),
               "--data-dir", str(data))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    server = RestoredServer(data, f.workdir / "restored-socket", f.workdir / "restored.log")
    server.start()
    worker = None
    try:
        server.wait_open(DB, 120)
        dsn = server.dsn(DB)
        step("restored server open")
        with psycopg.connect(dsn) as conn:
            first = {t: int(n) for t, n in conn.execute(
                "SELECT table_id, max(event_id) FROM events WHERE received_at <= %s GROUP BY 1",
                (f.noted,))}  # fmt: skip
            after = conn.execute("SELECT count(*) FROM events WHERE received_at > %s", (f.noted,)).fetchone()
        assert after == (0,) and set(first) == {t.stack.opts.table_id for t in f.tables}  # as it was then
        live = (
            f.standby if f.standby.host.procs[0].poll() is None else f.primary
        )  # the broker the bridges use
        started = time.monotonic()
        with open(
            f.workdir / "restored-archive.log", "ab"
        ) as log:  # an archive worker on the restored server
            worker = subprocess.Popen(
                [*TABLECTL, "floor", "archive", "--dsn", dsn, "--host", live.host.ip, "--port", "1883",
                 "--worker", "restored", "--group", "floor-archive-restored", "--grace", "1", "--no-backup-check",
                 "--status-interval", "5"],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "FLOOR_ARCHIVE_PASSWORD": USERS["archive"]},
            )  # fmt: skip

        async def deal_on() -> None:  # the tables deal on: their new events show the archive the hole
            async with connected(f.tables):
                await asyncio.gather(*(deal_round(t) for t in f.tables))

        asyncio.run(deal_on())
        try:
            poll(lambda: all_archived(dsn, f.tables), 120, "the restored archive repaired from the tables")
        except AssertionError:
            raise AssertionError(f"not repaired: {diagnosis(f, dsn)}") from None
        f.figures["restore_repair_s"] = time.monotonic() - started
        got = counted(dsn, f.tables)
        assert got == {t.stack.opts.table_id: (0, 0, 0) for t in f.tables}, got
        with psycopg.connect(dsn) as conn:
            sources = conn.execute("SELECT table_id, source, min(event_id), max(event_id), count(*) FROM events"
                                   " GROUP BY 1, 2 ORDER BY 1, 2").fetchall()  # fmt: skip
            refetched = conn.execute("SELECT table_id, min(event_id) FROM events WHERE source = 'replay'"
                                     " GROUP BY 1").fetchall()  # fmt: skip
            missing = conn.execute("SELECT count(*) FROM missing_events").fetchone()
        # everything after the noted time came back from the tables (the live stream went to the restored
        # worker only from its start): each table's first re-fetched id follows what was restored
        assert {t: i for t, i in refetched} == {t: n + 1 for t, n in first.items()}, (
            refetched,
            first,
            sources,
        )
        assert missing == (0,)  # the tables still keep everything: nothing gone for good
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(20)
        server.stop()
        print(f"figures: {f.figures}")
