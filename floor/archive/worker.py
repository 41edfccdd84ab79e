"""The floor archive worker: floor broker → PostgreSQL (``tablectl floor archive``).

One worker = one MQTT session + one writer thread + one maintenance thread:

- **MQTT**: an MQTT 3.1.1 persistent session (``clean_session=False``, a fixed client id per worker) so the
  floor broker keeps queueing while the worker is away and restores the session after its own restart
  (mosquitto 2.0.11 does not restore MQTT v5 sessions, docs/reliability.md F3). Subscriptions:
  ``$share/<group>/casino/<site>/table/+/#`` (the workers of one group split the traffic) and, not shared,
  the few retained topics a newcomer needs at once (``status``, ``state/software``, ``audit/checkpoint``:
  mosquitto sends no retained messages to a shared subscription). Messages are acknowledged by hand
  (``manual_ack``) only after the transaction that stores them committed: a worker that dies loses nothing,
  the broker redelivers to the session.
- **Writer**: batches messages into one transaction each (inserts idempotent on (site, table, event_id)): up to
  ``batch`` while it keeps up, ``backlog_batch`` while a backlog waits.
- **Maintenance**: whichever worker holds the PostgreSQL advisory lock ``REPAIR_LOCK`` finds gaps
  (``gaps.GapFinder``, driven by the ``floor_arrivals`` each batch appends) and asks the tables to resend
  (``repair.Repairer``) over a second, MQTT v5 connection (the re-fetch names its answer address
  ``<prefix>/cmd/replay/response/<username>`` as ``reply_to`` in the request, which crosses the 3.1.1 bridge, and
  as the v5 response topic), and verifies the audit checkpoints (``chain``). If it dies, another worker takes
  the lock. With ``check_backups`` (``tablectl floor archive``; off for tests' own servers) it also raises the
  floor alerts of late or failed backups, restore checks and WAL archiving (``backup.health``) every minute.
- **Contact**: the table bridges' link notices (``contact``) and the time each table was last heard from.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import paho.mqtt.client as mqtt
import psycopg
from paho.mqtt.reasoncodes import ReasonCode

from controller import sdnotify
from controller.config.endpoint import TlsConfig
from controller.mqtt.floor_bridge import LINK_TOPIC
from controller.mqtt.paho_client import (
    BrokerEndpoint,
    ReadAheadClient,
    new_client,
    publish_properties,
    quick_reconnect,
)
from controller.topics import EVENT_HEAD
from floor.archive import store
from floor.archive.chain import check_chains
from floor.archive.contact import (
    WORKER_BEAT_S,
    Head,
    LinkNotice,
    head,
    heartbeat,
    is_link_topic,
    link_notice,
    record_heartbeats,
    record_worker,
    store_link,
)
from floor.archive.repair import CHUNK, Repairer, request_payload
from floor.backup.health import CHECK_EVERY_S, raise_backup_alerts
from floor.common.messages import (
    CHECKPOINT_TOPIC,
    SOFTWARE_TOPIC,
    Envelope,
    Ignored,
    Message,
    Rejected,
    ReplayClose,
    Status,
    TableRef,
    classify,
    split_topic,
)
from floor.common.notify import notify

log = logging.getLogger("floor.archive")
REPLAY_RESPONSE = "cmd/replay/response/{user}"
LAG_SAMPLES = 100_000  # lag samples kept between two reads (floor/archive/report.py reads them each interval)


class _Received(NamedTuple):
    """One MQTT message handed from the network thread to the writer (a tuple: made once a message)."""

    acker: Any  # the persistent session's client (acknowledged by hand after the commit), else None
    mid: int
    qos: int
    topic: str
    payload: bytes
    retained: bool  # the RETAIN flag on arrival: a retained message handed over again
    message: Message | None  # classified on arrival (in the network thread, while the writer waits on the
    # database); None for a link topic (floor/archive/contact.py), read by the writer


@dataclass(frozen=True)
class ArchiveConfig:
    dsn: str
    host: str
    port: int
    username: str
    password: str = field(repr=False)
    worker: str = "1"
    group: str = "floor-archive"
    site: str = "+"
    tls: TlsConfig | None = None  # the floor broker's CA (and a client certificate): verified
    batch: int = 500
    backlog_batch: int = 2000  # a batch while at least ``batch`` more wait behind it (a backlog, as after an
    # outage): a transaction's fixed work (the statements, a statement's values a table) over more events
    grace: float = 2.0
    answer_timeout: float = 10.0
    maintenance_every: float = 0.5
    refetch_chunk: int = CHUNK  # ids re-fetched at once: at most the floor broker's max_queued_messages
    check_backups: bool = False  # late or failed backups alerted (floor/backup/health.py)


@dataclass
class ArchiveStats:
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    batches: int = 0
    retries: int = 0
    repairs_held: bool = False
    # (table, seconds from the envelope's ts to the commit) of each live event, until read (take_lags)
    lags: deque[tuple[TableRef, float]] = field(default_factory=lambda: deque(maxlen=LAG_SAMPLES), repr=False)


@dataclass(frozen=True, slots=True)
class ArchiveCounters:
    """What a worker did since it started, for its reports (floor/archive/report.py reads only this: keep it)."""

    received: int
    stored: int
    duplicates: int
    rejected: int
    retries: int
    refetch_requests: int  # re-fetch requests sent to tables (by this worker, while it held the repairs)
    refetch_answers: int
    missing_alerts: int  # events given up on: event_missing alerts raised
    open_gaps: int  # gaps this worker is repairing now
    repairs_held: bool  # this worker holds the repair lock
    connected: bool  # subscribed on the floor broker


class ArchiveWorker:
    def __init__(self, cfg: ArchiveConfig) -> None:
        self.cfg = cfg
        self.stats = ArchiveStats()
        self._queue: queue.SimpleQueue[_Received] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._threads: list[threading.Thread] = []
        self._replay_suffix = REPLAY_RESPONSE.format(user=cfg.username)
        self.repairer = Repairer(
            self._send_replay, username=cfg.username, grace=cfg.grace, answer_timeout=cfg.answer_timeout,
            chunk=cfg.refetch_chunk,
        )  # fmt: skip
        self._main = self._client(f"floor-archive-{cfg.worker}", persistent=True)
        self._replay = self._client(f"floor-replay-{cfg.worker}-{secrets.token_hex(3)}", persistent=False)
        self._replay_ready = threading.Event()
        # subscription -> the event set once the broker acknowledged it (SUBACK): before that, what a table
        # publishes is not routed to this worker, so "ready" means subscribed, not merely connected
        self._pending_subs: dict[tuple[int, int], threading.Event] = {}  # (id(client), mid): two clients

    # ---- MQTT ----
    def _client(self, client_id: str, *, persistent: bool) -> mqtt.Client:
        endpoint = BrokerEndpoint(
            self.cfg.host, self.cfg.port, self.cfg.username, self.cfg.password, self.cfg.tls
        )
        if persistent:
            client = new_client(  # read ahead: a backlog arrives as a flood of small messages
                endpoint, client_id, protocol=mqtt.MQTTv311, clean_session=False, manual_ack=True,
                read_ahead=True,
            )  # fmt: skip
            client.on_connect = self._on_main_connect
            client.on_disconnect = lambda *a: self._connected.clear()
        else:
            client = new_client(endpoint, client_id)
            client.on_connect = self._on_replay_connect
        client.max_inflight_messages_set(100)
        quick_reconnect(client)
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        return client

    def _subscribe(self, client: mqtt.Client, topics: Any, ready: threading.Event) -> None:
        result, mid = (
            client.subscribe(topics) if isinstance(topics, list) else client.subscribe(topics, qos=1)
        )
        if result == mqtt.MQTT_ERR_SUCCESS and mid is not None:
            self._pending_subs[(id(client), mid)] = ready

    def _on_subscribe(
        self, client: mqtt.Client, userdata: Any, mid: int, reason_codes: list[ReasonCode], properties: Any
    ) -> None:
        ready = self._pending_subs.pop((id(client), mid), None)
        if ready is None:
            return
        refused = [rc for rc in reason_codes if rc.is_failure]
        if refused:
            log.error("floor broker refused the archive's subscription: %s", refused)
            return
        ready.set()

    def _on_main_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: ReasonCode, properties: Any
    ) -> None:
        if reason.is_failure:
            log.error("floor broker refused the archive: %s", reason)
            return
        base = f"casino/{self.cfg.site}/table/+"
        subs = [(f"$share/{self.cfg.group}/{base}/#", 1)]
        subs += [
            (f"{base}/{rel}", 1)
            for rel in ("status", SOFTWARE_TOPIC, CHECKPOINT_TOPIC, LINK_TOPIC, EVENT_HEAD)
        ]
        self._subscribe(client, subs, self._connected)

    def _on_replay_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: ReasonCode, properties: Any
    ) -> None:
        if reason.is_failure:
            return
        # the closing documents on the answer address, each re-fetched event under it by its own topic
        self._subscribe(client, f"casino/{self.cfg.site}/table/+/{self._replay_suffix}/#", self._replay_ready)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        # paho thread: classify and hand over, never block on the database here (the parsing runs while the
        # writer waits on the database). Only the persistent session acks by hand.
        acker = client if client is self._main else None
        topic, payload = msg.topic, bytes(msg.payload)
        message = None if is_link_topic(topic) else classify(topic, payload, self._replay_suffix)
        self._queue.put(_Received(acker, msg.mid, msg.qos, topic, payload, bool(msg.retain), message))

    def _send_replay(self, table: TableRef, body: dict[str, Any]) -> None:
        """The request names its answer address twice: ``reply_to`` in the body (crosses the 3.1.1 bridge) and
        the v5 response topic (a table on the floor broker itself)."""
        props = publish_properties(response_topic=f"{table.prefix}/{self._replay_suffix}")
        self._replay.publish(f"{table.prefix}/cmd/replay", request_payload(body), qos=1, properties=props)

    # ---- life cycle ----
    def start(self, timeout: float = 15.0) -> ArchiveWorker:
        with store.connect(self.cfg.dsn) as conn:
            store.migrate(conn)
        for target in (self._writer, self._maintenance):
            t = threading.Thread(
                target=target, name=f"floor-{target.__name__}-{self.cfg.worker}", daemon=True
            )
            t.start()
            self._threads.append(t)
        for client in (self._main, self._replay):
            client.connect_async(self.cfg.host, self.cfg.port, keepalive=15)
            client.loop_start()
        if not (self._connected.wait(timeout) and self._replay_ready.wait(timeout)):
            self.stop()
            raise TimeoutError(f"archive worker {self.cfg.worker}: floor broker not reachable")
        return self

    def stop(self) -> None:
        """Stop: the MQTT session stays on the broker (queued messages wait for the next start)."""
        self._stop.set()
        for client in (self._main, self._replay):
            client.disconnect()
            client.loop_stop()
        for t in self._threads:
            t.join(timeout=10)

    def kill(self) -> None:
        """Drop the connections without a clean disconnect (a crashed worker; tests)."""
        self._stop.set()
        for client in (self._main, self._replay):
            sock = client.socket()
            if sock is not None:
                sock.close()
            client.loop_stop()
        for t in self._threads:
            t.join(timeout=10)

    def counters(self) -> ArchiveCounters:
        """A snapshot of the counters (any thread)."""
        s, r = self.stats, self.repairer.stats
        return ArchiveCounters(
            received=s.received, stored=s.stored, duplicates=s.duplicates, rejected=s.rejected,
            retries=s.retries, refetch_requests=r["requests"], refetch_answers=r["answers"],
            missing_alerts=r["alerts"], open_gaps=self.repairer.open_gaps(), repairs_held=s.repairs_held,
            connected=self._connected.is_set(),
        )  # fmt: skip

    def take_lags(self) -> list[tuple[TableRef, float]]:
        """The live events' lag (envelope ts to commit, seconds) since the last call, by table (any thread)."""
        taken: list[tuple[TableRef, float]] = []
        with contextlib.suppress(IndexError):
            while True:
                taken.append(self.stats.lags.popleft())
        return taken

    def request_stop(self) -> None:
        """From a signal handler: ``run_forever`` returns after a clean stop."""
        self._stop.set()

    def run_forever(self) -> None:
        """Start, then wait for a stop. Under systemd (``Type=notify``, systemd/floor/): READY=1 once the schema
        is current and both broker sessions are subscribed; WATCHDOG=1 every second while the writer and the
        maintenance threads are alive (a dead or hung worker stops the pings and systemd restarts it)."""
        self.start()
        sdnotify.ready(f"archive worker {self.cfg.worker}: subscribed on {self.cfg.host}:{self.cfg.port}")
        try:
            while not self._stop.wait(1.0):
                if all(t.is_alive() for t in self._threads):
                    sdnotify.watchdog()
        finally:
            sdnotify.stopping()
            self.stop()

    # ---- writer ----
    def _writer(self) -> None:
        conn: psycopg.Connection | None = None
        while not self._stop.is_set():
            try:
                first = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            batch = [first]
            backlog = self._queue.qsize() >= self.cfg.batch  # keeping up: small batches, the lag stays short
            limit = max(self.cfg.batch, self.cfg.backlog_batch) if backlog else self.cfg.batch
            while len(batch) < limit:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            while not self._stop.is_set():
                try:
                    if conn is None or conn.closed:
                        conn = store.connect(self.cfg.dsn)
                    closes = self._store_batch(conn, batch)
                    break
                except psycopg.Error as exc:  # deadlock with another worker, or the database went away
                    self.stats.retries += 1
                    log.warning("archive batch failed (%s); retrying", exc)
                    if conn is not None and not conn.closed and conn.info.transaction_status:
                        with contextlib.suppress(psycopg.Error):  # a connection that just broke
                            conn.rollback()
                    if isinstance(exc, psycopg.OperationalError | psycopg.errors.ReadOnlySqlTransaction):
                        # the server went away, or is (now) a standby: connect again, and a multi-host DSN
                        # with target_session_attrs=read-write finds the primary (docs/floor.md "The standby")
                        if conn is not None:
                            conn.close()
                        conn = None
                    time.sleep(0.2)
            else:
                break  # stopping: unacknowledged messages stay with the broker
            self._ack(batch)
            for close in closes:
                self.repairer.answered(conn, close)
        if conn is not None:
            conn.close()

    @staticmethod
    def _ack(batch: list[_Received]) -> None:
        """Acknowledge a committed batch: the persistent session's messages in one write to the broker."""
        by_client: dict[int, tuple[Any, list[tuple[int, int]]]] = {}
        for r in batch:
            if r.acker is not None and r.qos > 0:
                by_client.setdefault(id(r.acker), (r.acker, []))[1].append((r.mid, r.qos))
        for acker, acks in by_client.values():
            if isinstance(acker, ReadAheadClient):
                acker.ack_many(acks)
            else:
                for mid, qos in acks:
                    acker.ack(mid, qos)

    def _store_batch(self, conn: psycopg.Connection, batch: list[_Received]) -> list[ReplayClose]:
        envelopes: list[Envelope] = []
        statuses: list[tuple[Status, bool]] = []  # (status, contact)
        rejected: list[Rejected] = []
        closes: list[ReplayClose] = []
        links: list[tuple[LinkNotice, bool]] = []  # (notice, contact)
        beats: set[TableRef] = set()
        heads: dict[TableRef, int] = {}
        fresh: set[TableRef] = (
            set()
        )  # tables heard from by news, not only by retained messages handed over again
        seen: set[TableRef] = set()
        for received in batch:
            topic, payload, retained = received.topic, received.payload, received.retained
            table = split[0] if (split := split_topic(topic)) is not None else None
            if table is not None:
                seen.add(table)
                if not retained:
                    fresh.add(table)
            msg = received.message
            if msg is None:  # the bridge's notice ("1" / "0"), the table broker's heartbeat, the head
                notice, beat, top = link_notice(topic, payload), heartbeat(topic), head(topic, payload)
                if isinstance(top, Head):
                    heads[top.table] = max(heads.get(top.table, 0), top.last_event_id)
                elif isinstance(top, str):
                    rejected.append(Rejected(topic[:200], top, len(payload)))
                elif beat is not None:
                    if not retained:
                        beats.add(beat)
                elif notice is not None:
                    links.append((notice, not retained))
                else:
                    rejected.append(Rejected(topic[:200], "link notice is neither 1 nor 0", len(payload)))
                continue
            if isinstance(msg, Envelope):
                envelopes.append(msg)
            elif isinstance(msg, Status):
                statuses.append((msg, not retained))
            elif isinstance(msg, ReplayClose):
                closes.append(msg)
            elif isinstance(msg, Rejected):
                rejected.append(msg)
            elif isinstance(msg, Ignored):
                pass
        # one order for every worker: concurrent transactions lock rows in the same order
        envelopes.sort(key=lambda e: (e.table.site, e.table.table_id, e.event_id))
        with conn.transaction():
            cur = conn.cursor()
            stale = frozenset(seen - fresh)
            new = store.store_envelopes(cur, envelopes, stale)
            for status, contact in statuses:
                store.store_status(cur, status, contact=contact)
            for notice, contact in links:
                store_link(cur, notice, contact=contact)
            if beats:
                store.ensure_tables(cur, beats)
                record_heartbeats(cur, beats)
            if (
                heads
            ):  # the newest id each table wrote: known_to, so a lost tail is a hole (floor/archive/gaps.py)
                store.ensure_tables(cur, heads)
                store.insert_arrivals(cur, {t: (n, n) for t, n in heads.items()}, stale)
            for r in rejected:
                store.store_rejected(cur, r)
            if new or statuses or links or heads:  # the tables written: the dashboard refreshes only theirs
                written = {e.table for e in envelopes} if new else set()
                written |= {s.table for s, _ in statuses} | {n.table for n, _ in links}
                notify(cur, written | heads.keys())  # delivered on commit (floor/web/live.py)
        self.stats.received += len(batch)
        self.stats.stored += new
        self.stats.duplicates += len(envelopes) - new
        self.stats.rejected += len(rejected)
        self.stats.batches += 1
        committed = datetime.now(UTC)
        for refetched in {e.table for e in envelopes if e.source == "replay"}:
            self.repairer.progress(refetched)  # an answer arriving is not "no answer"
        self.stats.lags.extend(
            (e.table, (committed - e.ts).total_seconds()) for e in envelopes if e.source == "live"
        )
        return closes

    # ---- maintenance (one worker at a time) ----
    def _maintenance(self) -> None:
        conn: psycopg.Connection | None = None
        software_seen: dict[TableRef, int] = {}
        beat_at = backups_at = 0.0
        while not self._stop.wait(self.cfg.maintenance_every):
            try:
                if conn is None or conn.closed:
                    conn = store.connect(self.cfg.dsn, autocommit=True)
                    self.stats.repairs_held = False
                if (
                    time.monotonic() - beat_at >= WORKER_BEAT_S
                ):  # alive and subscribed (floor/archive/contact.py)
                    record_worker(
                        conn.cursor(), f"{self.cfg.group}/{self.cfg.worker}", self._connected.is_set()
                    )
                    beat_at = time.monotonic()
                if not self.stats.repairs_held:
                    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (store.REPAIR_LOCK,)).fetchone()
                    self.stats.repairs_held = bool(row and row[0])
                if self.stats.repairs_held:
                    self.repairer.step(conn)
                    if check_chains(conn, software_seen):  # events kept aside: their ids are holes again
                        self.repairer.rescan()
                    if self.cfg.check_backups and time.monotonic() - backups_at >= CHECK_EVERY_S:
                        backups_at = time.monotonic()
                        raise_backup_alerts(conn)
            except psycopg.Error as exc:
                log.warning("archive maintenance failed (%s)", exc)
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()  # releases the advisory lock
