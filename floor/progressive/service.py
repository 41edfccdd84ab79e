"""``tablectl floor progressive run``: the link's controller (docs/progressive.md).

At start: the software digest against the recorded manifest (refused otherwise), the link's key, PostgreSQL (the
schema current; one controller per link: a session advisory lock), the link's row (created from link.toml at
the first start; afterwards link.toml's parameters must be the recorded ones, changed only by ``set``), the
floor broker as ``progressive-<link>``. Then, until stopped: take the archived envelopes not yet taken (woken by
the archive's NOTIFY, else every ``poll_s``) in one transaction per batch (engine.py), and publish the signed meter
after every change, after every status or parameter change (NOTIFY ``floor_progressive``) and at least every
``heartbeat_s``. Nothing is published before it is committed. A crash loses nothing: the state is the database's,
and what was not committed is taken again."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, replace

import paho.mqtt.client as mqtt
import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller import sdnotify
from controller.audit.checkpoint import public_key_hex
from controller.audit.keys import load_or_create
from controller.mqtt.paho_client import BrokerEndpoint, new_client, quick_reconnect
from floor.archive import store
from floor.common.notify import NOTIFY_CHANNEL as ARCHIVE_CHANNEL
from floor.progressive import engine, intake, integrity, journal, ledger, signing
from floor.progressive.config import LinkConfig

log = logging.getLogger("floor.progressive")
LINK_LOCK = 0x7AB1  # advisory lock class of a link's controller (with hashtext(link))
RECONNECT_FIRST_S, RECONNECT_LONGEST_S = (
    0.2,
    5.0,
)  # PostgreSQL lost: the first wait, doubled up to the longest


class StartRefused(RuntimeError):
    """The controller will not run (software, key, parameters, another controller); says why."""


@dataclass
class Counters:
    taken: int = 0
    refused: int = 0
    contributions: int = 0
    hits: int = 0
    published: int = 0
    last_seq: int = 0


class Controller:
    def __init__(self, cfg: LinkConfig, dsn: str, password: str) -> None:
        self.cfg = cfg
        self.dsn = dsn
        self.name = cfg.params.link
        self.counters = Counters()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._key: Ed25519PrivateKey | None = None
        self._conn: psycopg.Connection | None = None
        self._listen: psycopg.Connection | None = None
        self._topic = signing.topic(cfg.params.site, self.name)
        endpoint = BrokerEndpoint(cfg.host, cfg.port, cfg.username, password, cfg.tls)
        self._client = new_client(endpoint, f"floor-progressive-{self.name}")
        self._client.max_queued_messages_set(16)  # a broker away long: the newest meters, not hours of them
        quick_reconnect(self._client)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = lambda *a: self._connected.clear()

    # ---- start ----
    def _on_connect(
        self, client: mqtt.Client, userdata: object, flags: object, reason: object, props: object
    ) -> None:
        if getattr(reason, "is_failure", False):
            log.error("floor broker refused the link's controller: %s", reason)
            return
        self._connected.set()

    def start(self, timeout: float = 15.0) -> Controller:
        """Everything of the module docstring's start, or nothing held (IntegrityError, StartRefused, ...)."""
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> Controller:
        digest = integrity.check(self.cfg.manifest)  # raises IntegrityError: refuse to run
        self._key = load_or_create(self.cfg.key_file)
        public = public_key_hex(self._key.public_key())
        recorded = integrity.read_manifest(self.cfg.manifest).get("public_keys", {}).get(self.name)
        if recorded is not None and recorded != public:
            raise StartRefused(
                f"link {self.name}: its key {self.cfg.key_file} is not the one recorded in the manifest"
            )
        self._connect_db()
        assert self._conn is not None
        store.migrate(self._conn)  # checks the schema is current (the controller's role cannot create)
        self._ensure_link(self._conn)
        self._client.connect_async(self.cfg.host, self.cfg.port, keepalive=15)
        self._client.loop_start()
        if not self._connected.wait(timeout):
            raise TimeoutError(
                f"link {self.name}: floor broker {self.cfg.host}:{self.cfg.port} not reachable"
            )
        log.info(
            "link %s: software %s..., meter key %s, publishing on %s",
            self.name,
            digest[:16],
            public,
            self._topic,
        )
        self.publish()
        return self

    def _connect_db(self) -> None:
        """The working connection (holding the link's advisory lock: one controller per link) and the listening
        one. StartRefused when another controller holds the lock."""
        self._close_db()
        name = f"floor-progressive-{self.name}"
        conn = store.connect(self.dsn, autocommit=True, application_name=name)
        self._conn = conn
        row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LINK_LOCK, self.name)).fetchone()
        if not (row and row[0]):
            raise StartRefused(f"link {self.name}: another controller runs it (advisory lock held)")
        self._listen = store.connect(self.dsn, autocommit=True, application_name=name)
        self._listen.execute(f"LISTEN {ARCHIVE_CHANNEL}")
        self._listen.execute(f"LISTEN {ledger.NOTIFY_CHANNEL}")

    def _close_db(self) -> None:
        for conn in (self._listen, self._conn):
            if conn is not None and not conn.closed:
                conn.close()  # releases the link's advisory lock
        self._listen = self._conn = None

    def _reconnect(self) -> None:
        """PostgreSQL went away (restart, a dropped connection): connect again, with back-off, until stopped.
        Nothing is published meanwhile: the tables see the meter age and stop taking linked chips."""
        delay = RECONNECT_FIRST_S
        while not self._stop.wait(delay):
            try:
                self._connect_db()
                log.warning("link %s: PostgreSQL connected again", self.name)
                return
            except psycopg.OperationalError as exc:
                log.warning("link %s: PostgreSQL not reachable (%s); again in %.1f s", self.name, exc, delay)
                delay = min(delay * 2, RECONNECT_LONGEST_S)

    def _ensure_link(self, conn: psycopg.Connection) -> None:
        with conn.transaction():
            cur = conn.cursor()
            link = ledger.read(cur, self.name, lock=True)
            if link is None:
                link = ledger.create(cur, self.cfg.params, ledger.LinkStatus.RUNNING, "link.toml")
                head = journal.append(
                    cur,
                    self.name,
                    link.journal,
                    "created",
                    {"params": self.cfg.params.to_dict(), "meter_units": link.meter.meter_units},
                )
                ledger.save(cur, replace(link, journal=head))
                log.info("link %s created at its base %d", self.name, self.cfg.params.base_minor)
                return
            if link.params == self.cfg.params:
                return
            reason = (
                f"link.toml's [link] is not the recorded version {link.params_version}: parameters change only with"
                " the link suspended, under dual control (tablectl floor progressive set)"
            )
            head = journal.append(
                cur, self.name, link.journal, "refused", {"action": "start", "reason": reason}
            )
            ledger.save(cur, replace(link, journal=head))
        raise StartRefused(f"link {self.name}: {reason}")

    # ---- work ----
    def step(self) -> engine.Outcome:
        """Take one batch from the archive (if any) and publish when something changed."""
        assert self._conn is not None
        found = intake.fetch(
            self._conn.cursor(),
            self.name,
            self.cfg.params.site,
            verified_only=self.cfg.verified_only,
            limit=self.cfg.batch,
        )
        if not found:
            return engine.Outcome()
        out = engine.take(self._conn, self.name, found)
        c = self.counters
        c.taken, c.refused = c.taken + out.taken, c.refused + out.refused
        c.contributions, c.hits = c.contributions + out.contributions, c.hits + len(out.hits)
        if out.changed:
            self.publish()
        return out

    def publish(self) -> int:
        """Sign and publish the committed state (retained, QoS 1) under a new seq; returns the seq."""
        assert self._conn is not None and self._key is not None
        with self._conn.transaction():
            cur = self._conn.cursor()
            row = cur.execute(
                "UPDATE progressive_links SET pub_seq = pub_seq + 1 WHERE link = %s RETURNING pub_seq",
                (self.name,),
            ).fetchone()
            link = ledger.read(cur, self.name)
            assert row is not None and link is not None
            pending = ledger.pending_hits(cur, self.name)
        doc = signing.sign(signing.document(link, pending, int(row[0]), signing.now_iso()), self._key)
        self._client.publish(
            self._topic, json.dumps(doc, sort_keys=True, separators=(",", ":")), qos=1, retain=True
        )
        self.counters.published += 1
        self.counters.last_seq = int(row[0])
        return int(row[0])

    def _wait(self, seconds: float) -> bool:
        """Wait for a notification up to ``seconds``; True when a link's status or parameters changed."""
        assert self._listen is not None
        changed = False
        for n in self._listen.notifies(timeout=max(0.0, seconds), stop_after=1):
            changed = changed or (n.channel == ledger.NOTIFY_CHANNEL and n.payload == self.name)
        return changed

    def run(self) -> None:
        """Until ``request_stop``: the loop of the module docstring; a lost database connection is made again
        (``_reconnect``) and the loop goes on from what is committed."""
        while not self._stop.is_set():
            try:
                self._loop()
            except psycopg.OperationalError as exc:
                log.warning("link %s: PostgreSQL connection lost (%s)", self.name, exc)
                self._reconnect()

    def _loop(self) -> None:
        last_publish = time.monotonic()
        while not self._stop.is_set():
            sdnotify.watchdog()  # every turn: a long backlog is work, not a hang
            out = self.step()
            if out.changed:
                last_publish = time.monotonic()
            if out.taken or out.duplicates:
                continue  # more may be waiting: read again before sleeping
            due = last_publish + self.cfg.heartbeat_s - time.monotonic()
            if (
                self._wait(min(self.cfg.poll_s, max(due, 0.0)))
                or time.monotonic() >= last_publish + self.cfg.heartbeat_s
            ):
                self.publish()
                last_publish = time.monotonic()

    def run_forever(self) -> None:
        self.start()
        sdnotify.ready(f"link {self.name}: publishing on {self._topic}")
        try:
            self.run()
        finally:
            sdnotify.stopping()
            self.stop()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        self._client.disconnect()
        self._client.loop_stop()
        self._close_db()
