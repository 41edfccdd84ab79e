"""A whole casino floor on one machine (`tablectl demo --floor`, docs/floor.md): N emulated tables
(tablebench/stack.py: broker, emulated shoe, the real service), each table broker bridged to one floor broker
with the bridge section ``controller/mqtt/floor_bridge.py`` renders, a private PostgreSQL (tablebench/postgres.py)
with the floor schema, archive workers (``tablectl floor archive``) and the dashboard (``tablectl floor web``),
each a real process. ``stop()`` stops everything that ``start()`` started, in reverse order.

The floor broker runs the shipped configuration and ACL at the demo's site; its accounts (the tables' bridges,
the archive, the dashboard, a monitor) get passwords made for this run.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from controller.broker import BrokerKind
from controller.mqtt.floor_bridge import BridgeConfig, render
from controller.paste import command
from controller.rules.profiles import load_profile
from tablebench import ROOT
from tablebench.broker import Broker, free_port
from tablebench.floor_console import DemoTable, write_tables
from tablebench.postgres import Postgres
from tablebench.procs import stop_process
from tablebench.stack import TABLECTL, Stack, StackOptions

SITE = "demo"
ARCHIVE_ACCOUNT = "archive"
WEB_ACCOUNT = "supervisor-floor"
MONITOR_ACCOUNT = "monitor"
DEMO_SUPERVISOR = "alice"  # the dashboard account the demo makes (dashboard_login)
ARCHIVE_PASSWORD_ENV = "FLOOR_ARCHIVE_PASSWORD"  # the environment variables the floor commands read
WEB_PASSWORD_ENV = "FLOOR_WEB_PASSWORD"
DATABASE = "floor"


@dataclass(frozen=True)
class FloorOptions:
    tables: int = 3
    workers: int = 2
    profile: str = "pt-2001"
    seed: int = 7  # the emulated shoes' card order (each table adds its number)


@dataclass(frozen=True)
class Login:
    """What the demo prints for the dashboard: who signs in and how."""

    user: str
    secret: str
    what: str


def dashboard_login(stack: FloorStack) -> Login:
    """The dashboard's login for the demo: THE ONE PLACE where it is created: a supervisor account made with
    ``tablectl floor user add`` (the password on its standard input, never its command line), a new password
    each run. Table alerts are acknowledged with a key made in the browser and enrolled at the tables
    (docs/floor.md "Acknowledging alerts"); floor alerts with the login alone."""
    password = secrets.token_urlsafe(12)
    log = stack.workdir / "users.log"
    with open(log, "ab") as out:
        done = subprocess.run([*TABLECTL, "floor", "user", "add", DEMO_SUPERVISOR, "--role", "supervisor",
                               "--password-file", "-", "--dsn", stack.dsn], input=f"{password}\n".encode(),
                              stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False, timeout=120)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"floor user add failed: {_tail(log)}")
    return Login(DEMO_SUPERVISOR, password, "dashboard supervisor: log in at the URL")


class FloorStack:
    def __init__(self, workdir: Path, options: FloorOptions | None = None) -> None:
        self.workdir = workdir
        self.opts = options or FloorOptions()
        self.table_ids = [f"T{i}" for i in range(1, self.opts.tables + 1)]
        self.users = {f"table-{t}": secrets.token_urlsafe(12) for t in self.table_ids}
        self.users |= {a: secrets.token_urlsafe(12) for a in (ARCHIVE_ACCOUNT, WEB_ACCOUNT, MONITOR_ACCOUNT)}
        self.postgres: Postgres | None = None
        self.floor: Broker | None = None
        self.tables: list[Stack] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.web: subprocess.Popen[bytes] | None = None
        self.web_port = 0
        self.login: Login | None = None

    @property
    def dsn(self) -> str:
        assert self.postgres is not None
        return self.postgres.dsn(DATABASE)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}/"

    # ---- start ----
    def start(self) -> FloorStack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.postgres = Postgres.start()
        self._create_database()
        self.floor = Broker.start(
            self.workdir / "floor-broker", users=self.users, site=SITE, acl=BrokerKind.FLOOR
        )
        for i, table_id in enumerate(self.table_ids, 1):
            self._start_table(i, table_id)
        for n in range(1, self.opts.workers + 1):
            self.workers.append(self._start_archive(f"a{n}"))
        self._start_web()
        self.login = dashboard_login(self)
        write_tables(self.workdir, [DemoTable(
            t.opts.table_id, t.host, t.port, t.prefix, t.shoe_control, str(t.key_dir),
            str(t.workdir / "credentials.toml")) for t in self.tables])  # fmt: skip
        return self

    def _create_database(self) -> None:
        import psycopg

        assert self.postgres is not None
        with psycopg.connect(self.postgres.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        _run([*TABLECTL, "floor", "migrate", "--dsn", self.dsn], self.workdir / "migrate.log")

    def _start_table(self, i: int, table_id: str) -> None:
        assert self.floor is not None
        account = f"table-{table_id}"
        bridge = BridgeConfig(
            site=SITE, table_id=table_id, prefix=f"casino/{SITE}/table/{table_id}",
            hosts=(f"{self.floor.host}:{self.floor.port}",), username=account, password=self.users[account],
            ca=None,  # both brokers on this machine's loopback; a floor network's uplink is TLS (bridge.toml ca)
        )  # fmt: skip
        decks = load_profile(str(ROOT / "firmware_configs" / "profiles" / f"{self.opts.profile}.toml")).decks
        scenario = {"kind": "continuous", "decks": decks, "seed": self.opts.seed + i, "start_empty": True}
        options = StackOptions(profile=self.opts.profile, table_id=table_id, site=SITE, scenario=scenario,
                               jackpot=False, broker_config=tuple(render(bridge).splitlines()))  # fmt: skip
        stack = Stack(self.workdir / table_id, options)
        self.tables.append(stack)  # before start(): stop() also stops a table that started halfway
        stack.start()
        # the operator's enrolment of the table's audit key, from its integrity manifest (docs/floor.md)
        _run([*TABLECTL, "floor", "enrol", "--dsn", self.dsn, "--site", SITE, "--table", table_id, "--manifest",
              str(stack.workdir / "integrity.json"), "--user", "demo"], self.workdir / "enrol.log")  # fmt: skip

    def _start_archive(self, worker: str) -> subprocess.Popen[bytes]:
        assert self.floor is not None
        cmd = [*TABLECTL, "floor", "archive", "--dsn", self.dsn, "--host", self.floor.host,
               "--port", str(self.floor.port), "--username", ARCHIVE_ACCOUNT, "--worker", worker,
               "--site", SITE, "--status-file", str(self.workdir / f"archive-{worker}.json")]  # fmt: skip
        env = {**os.environ, ARCHIVE_PASSWORD_ENV: self.users[ARCHIVE_ACCOUNT]}
        return _spawn(cmd, self.workdir / f"archive-{worker}.log", env)

    def _start_web(self, timeout: float = 60.0) -> None:
        assert self.floor is not None and self.tables
        self.web_port = free_port()
        cmd = [
            *TABLECTL,
            "floor",
            "web",
            "--dsn",
            self.dsn,
            "--listen",
            f"127.0.0.1:{self.web_port}",
            "--broker-host",
            self.floor.host,
            "--broker-port",
            str(self.floor.port),
            "--username",
            WEB_ACCOUNT,
            "--enrol-command",  # the page's enrolment command: at the demo's tables (floor_console.py)
            command("demo", "--workdir", self.workdir, "enrol"),
        ]  # fmt: skip
        env = {**os.environ, WEB_PASSWORD_ENV: self.users[WEB_ACCOUNT]}
        self.web = _spawn(cmd, self.workdir / "web.log", env)
        deadline = time.monotonic() + timeout
        while True:
            if self.web.poll() is not None:
                raise RuntimeError(f"the dashboard exited: {_tail(self.workdir / 'web.log')}")
            try:
                with urllib.request.urlopen(self.url, timeout=2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the dashboard did not answer: {_tail(self.workdir / 'web.log')}"
                    ) from None
                time.sleep(0.2)

    def settlements_archived(self) -> dict[str, int]:
        """Table id -> settlements (``events/settlement``) the archive holds."""
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            rows = conn.execute(
                "SELECT table_id, count(*) FROM events WHERE site = %s AND topic = 'events/settlement' "
                "GROUP BY table_id",
                (SITE,),
            ).fetchall()
        return {str(t): int(n) for t, n in rows}

    # ---- stop ----
    def stop(self) -> None:
        """Everything, in reverse order of start: dashboard, archive workers, tables, floor broker, PostgreSQL."""
        for proc in (self.web, *self.workers):
            stop_process(proc, signal.SIGTERM, 15)
        for stack in reversed(self.tables):
            stack.stop()
        if self.floor is not None:
            self.floor.stop()
        if self.postgres is not None:
            self.postgres.stop()

    def __enter__(self) -> FloorStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _spawn(cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
                                env=env)  # fmt: skip


def _run(cmd: list[str], log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:5])} failed: {_tail(log)}")


def _tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""
