"""The linked progressive's controller (issue 40, floor side), with real parts: PostgreSQL, the floor broker
(mosquitto with the shipped floor ACL), a real archive worker storing the stand-in tables' chained, checkpointed
envelopes (tests/support/floor.py StandInTable: not the table controller), and the controller itself as a
``tablectl floor progressive run`` process that the test SIGKILLs mid-stream.

Checked: the meter's growth equals the sum of the contributions to the 1/10,000 of a minor unit; each event is
counted once however often it is delivered; two hits at two tables are ordered and each frozen at the meter of its
moment, the link reseeded; a restart after SIGKILL resumes exactly; a parameter change while the link runs is
refused (journaled); every published meter verifies with the link's public key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import psycopg
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.audit.checkpoint import public_key_hex
from controller.audit.keys import load_or_create
from controller.broker import BrokerKind
from controller.jackpot import link_doc
from controller.jackpot.meter import UNIT
from controller.words import money
from floor.accounts import users
from floor.archive.enrol import set_trust_on_first_use
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.messages import TableRef
from floor.progressive import config as link_config
from floor.progressive import control, engine, intake, integrity, journal, report, signing
from floor.progressive.service import Controller, StartRefused
from tablebench.broker import Broker
from tests.support.floor import FLOOR_USERS, StandInTable, wait_until

ROOT = Path(__file__).resolve().parent.parent
LINK, SITE = "bank-a", "S1"
BET, INC, RES, BASE = 100, 1234, 321, 50_000  # odd shares: every contribution leaves a sub-cent remainder
PASSWORD = "supervisor-password-1"
ACCOUNTS = FLOOR_USERS | {f"progressive-{LINK}": "demo-progressive-bank-a"}  # the floor's, and the link's


@pytest.fixture
def floor_broker(tmp_path: Path):
    """The floor broker (shipped settings, floor ACL) with the floor's test accounts and the link's."""
    broker = Broker.start(tmp_path / "floor-broker", users=ACCOUNTS, acl=BrokerKind.FLOOR)
    try:
        yield broker
    finally:
        broker.stop()


def link_toml(tmp: Path, broker: Broker, **link: Any) -> Path:
    values = {
        "link": LINK,
        "site": SITE,
        "currency": "EUR",
        "bet_value": BET,
        "increment_bp": INC,
        "reserve_bp": RES,
        "base_minor": BASE,
        "limit_minor": 10_000_000,
        "members": ["T1", "T2"],
    } | link
    lines = ["[link]"] + [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    lines += [
        "[service]",
        "heartbeat_s = 1.0",
        "poll_s = 0.2",
        "batch = 5",
        f'key_file = "{tmp / "link.pem"}"',
        f'manifest = "{tmp / "manifest.json"}"',
        "[broker]",
        f'host = "{broker.host}"',
        f"port = {broker.port}",
    ]
    path = tmp / f"link-{len(list(tmp.glob('link-*.toml')))}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def controller(dsn: str, config: Path) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "controller.cli",
        "floor",
        "progressive",
        "run",
        "--dsn",
        dsn,
        "--config",
        str(config),
        "-q",
    ]
    env = {**os.environ, "FLOOR_PROGRESSIVE_PASSWORD": ACCOUNTS[f"progressive-{LINK}"]}
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


class MeterWatcher:
    """A member table's bridge account on the floor broker, reading the link's retained meter."""

    def __init__(self, broker: Broker) -> None:
        self.docs: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="watch-meter", protocol=mqtt.MQTTv5)
        self.client.username_pw_set("table-T1", FLOOR_USERS["table-T1"])
        self.client.on_connect = lambda c, *a: c.subscribe(signing.topic(SITE, LINK), qos=1)
        self.client.on_message = self._on_message
        self.client.connect(broker.host, broker.port, 15)
        self.client.loop_start()

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        with self.lock:
            self.docs.append(json.loads(msg.payload))

    def last(self) -> dict[str, Any]:
        with self.lock:
            return self.docs[-1] if self.docs else {}

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def one(dsn: str, sql: str, *params: Any) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql, params).fetchone()
        return row[0] if row else None


def meter_row(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT meter_units, reserve_units, overflow_units, seeded_units, prizes_units,"
            " returned_units FROM progressive_links WHERE link = %s",
            (LINK,),
        )
        names = [d.name for d in cur.description or ()]
        row = cur.fetchone()
        assert row is not None
        return dict(zip(names, row, strict=True))


def contribution(round_id: str, chips: int) -> dict[str, Any]:
    return {
        "action": "contribution",
        "link": LINK,
        "round_id": round_id,
        "seats": list(range(1, chips + 1)),
        "chips": chips,
        "bet_value": BET,
        "amount_minor": chips * BET,
    }


def jackpot(table: StandInTable, data: dict[str, Any]) -> int:
    return table.publish("events/jackpot", "jackpot", data)


@pytest.fixture
def floor(dsn: str, floor_broker: Broker, tmp_path: Path):
    archive = ArchiveWorker(
        ArchiveConfig(
            dsn=dsn,
            host=floor_broker.host,
            port=floor_broker.port,
            username="archive",
            password=FLOOR_USERS["archive"],
            worker="p1",
            grace=0.3,
            answer_timeout=2.0,
        )
    ).start()
    tables = {t: StandInTable(floor_broker.host, floor_broker.port, SITE, t) for t in ("T1", "T2", "T3")}
    with psycopg.connect(dsn) as conn:
        for name, t in tables.items():
            set_trust_on_first_use(conn, TableRef(SITE, name), True)
            t.publish(
                "state/software", "state", {"version": "0.1.0", "audit_public_key": t.public_key}, retain=True
            )
        for name in ("ana", "rui", "eva"):
            users.add_user(
                conn, name, users.Role.SUPERVISOR if name != "eva" else users.Role.VIEWER, PASSWORD
            )
    config = link_toml(tmp_path, floor_broker)
    cfg = link_config.load(config)
    integrity.record(cfg.manifest, {LINK: public_key_hex(load_or_create(cfg.key_file).public_key())})
    watcher = MeterWatcher(floor_broker)
    try:
        yield tables, config, cfg, watcher
    finally:
        watcher.close()
        for t in tables.values():
            t.close()
        archive.stop()


def checkpoint(*tables: StandInTable) -> None:
    for t in tables:
        t.checkpoint(t.next_id)  # proves every envelope so far (floor/archive/verify_events.py)
        t.flush()


def test_contributions_hits_crash_and_dual_control(dsn, floor_broker, floor, tmp_path) -> None:
    tables, config, cfg, watcher = floor
    t1, t2, t3 = tables["T1"], tables["T2"], tables["T3"]
    public = public_key_hex(load_or_create(cfg.key_file).public_key())
    proc = controller(dsn, config)
    try:
        wait_until(lambda: watcher.last().get("meter_minor") == BASE, what="the first meter")
        # ---- contributions, each counted once ----
        amounts = []
        for i in range(20):
            for t in (t1, t2):
                chips = 1 + i % 7
                jackpot(t, contribution(f"{t.table_id}-r{i}", chips))
                amounts.append(chips * BET)
        jackpot(t3, contribution("T3-r1", 2))  # not a member: refused, never counted
        jackpot(
            t1,
            {
                "action": "contribution",
                "link": "other",
                "round_id": "x",
                "chips": 1,
                "bet_value": BET,
                "amount_minor": BET,
            },
        )  # another link's: not ours to take
        jackpot(t2, contribution("T2-bad", 3) | {"amount_minor": 1})  # not chips x bet value: refused
        # the same envelope delivered again (a QoS 1 redelivery): archived once, counted once
        t1.publish_raw("events/jackpot", t1.kept[t1.next_id - 2])
        checkpoint(t1, t2, t3)
        wait_until(
            lambda: one(dsn, "SELECT count(*) FROM progressive_inputs") == 42, what="every envelope taken"
        )
        m = meter_row(dsn)
        assert m["meter_units"] == BASE * UNIT + sum(
            a * INC for a in amounts
        )  # to the 1/10,000 of a minor unit
        assert m["reserve_units"] == sum(a * RES for a in amounts)
        assert one(dsn, "SELECT count(*) FROM progressive_contributions") == 40
        refused = one(
            dsn,
            "SELECT array_agg(table_id ORDER BY table_id) FROM progressive_inputs WHERE outcome = 'refused'",
        )
        assert refused == ["T2", "T3"]
        # taking the same envelopes again (a controller that re-reads them) changes nothing
        with psycopg.connect(dsn) as conn:
            again = [
                (intake.Source(*r[:4]), r[4])
                for r in conn.execute(
                    "SELECT site, table_id, event_id, ts, data FROM events WHERE topic = 'events/jackpot'"
                )
            ]
            out = engine.take(conn, LINK, again)
        assert (
            out.taken == 0 and out.duplicates == len(again) - 1 and meter_row(dsn) == m
        )  # and not the other link's
        wait_until(lambda: watcher.last().get("meter_units") == m["meter_units"], what="the meter published")
        assert signing.verify(watcher.last(), public)

        # ---- SIGKILL mid-stream, restart: resumes exactly ----
        stream = []

        def feed() -> None:
            for i in range(120):
                t = (t1, t2)[i % 2]
                jackpot(t, contribution(f"s{i}", 1 + i % 3))
                stream.append((1 + i % 3) * BET)
                if i % 6 == 5:
                    checkpoint(t1, t2)

        feeder = threading.Thread(target=feed)
        feeder.start()
        wait_until(
            lambda: one(dsn, "SELECT count(*) FROM progressive_contributions") >= 46, what="stream under way"
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed_at = one(dsn, "SELECT count(*) FROM progressive_contributions")
        feeder.join(30)
        checkpoint(t1, t2)
        assert killed_at < 160, "the controller was killed after the stream, not in it"
        proc = controller(dsn, config)
        wait_until(
            lambda: one(dsn, "SELECT count(*) FROM progressive_contributions") == 160, what="the rest taken"
        )
        m = meter_row(dsn)
        assert m["meter_units"] == BASE * UNIT + sum(a * INC for a in amounts + stream)
        assert one(dsn, "SELECT count(*) FROM progressive_inputs") == 162
        # PostgreSQL drops the controller's connections (a restart, a failover): it connects again and goes on
        dropped = one(dsn, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                           " WHERE application_name = 'floor-progressive-bank-a'")  # fmt: skip
        assert dropped == 2
        for i, t in enumerate((t1, t2, t1, t2)):
            jackpot(t, contribution(f"after-drop-{i}", 2))
            stream.append(2 * BET)
        checkpoint(t1, t2)
        wait_until(
            lambda: one(dsn, "SELECT count(*) FROM progressive_contributions") == 164, what="after the drop"
        )
        assert meter_row(dsn)["meter_units"] == BASE * UNIT + sum(a * INC for a in amounts + stream)
        assert proc.poll() is None  # the same process, not a restart
        m = meter_row(dsn)
        seq_before = watcher.last()["seq"]

        # ---- two hits at two tables, nearly at once: ordered, each frozen at its moment, reseeded ----
        before = m["meter_units"]
        jackpot(
            t1,
            {
                "action": "hit_pending",
                "link": LINK,
                "round_id": "h1",
                "seat": 2,
                "combination": "FOUR_ACES_ONE_COLOUR",
            },
        )
        jackpot(
            t2,
            {
                "action": "hit_pending",
                "link": LINK,
                "round_id": "h2",
                "seat": 3,
                "combination": "FOUR_ACES_ONE_COLOUR",
            },
        )
        checkpoint(t1, t2)
        wait_until(lambda: len(watcher.last().get("pending", [])) == 2, what="both hits pending on the meter")
        doc = watcher.last()
        assert signing.verify(doc, public) and doc["seq"] > seq_before
        first, second = sorted(doc["pending"], key=lambda h: h["order"])
        assert second["order"] == first["order"] + 1
        assert first["amount_minor"] == before // UNIT  # PT-2001 r.43a: all of the meter at its moment
        reserve = m["reserve_units"]
        reseeded = BASE * UNIT + before % UNIT + reserve  # the remainder, the base, the reserve moved
        assert second["amount_minor"] == reseeded // UNIT
        after_hits = meter_row(dsn)
        assert after_hits["meter_units"] == BASE * UNIT + reseeded % UNIT and after_hits["reserve_units"] == 0
        # the table pays one (the frozen amount) and its verification rejects the other: given back
        by_table = {h["table"]: h for h in doc["pending"]}
        verified = {"action": "verified", "link": LINK, "hit_id": by_table["T1"]["hit_id"], "by": "sup"}
        jackpot(t1, verified)  # the table's supervisor verified it (journaled by the link, no refusal)
        jackpot(
            t1,
            {
                "action": "paid",
                "link": LINK,
                "hit_id": by_table["T1"]["hit_id"],
                "amount_minor": by_table["T1"]["amount_minor"],
            },
        )
        jackpot(t2, {"action": "paid", "link": LINK, "hit_id": by_table["T1"]["hit_id"], "amount_minor": 1})
        jackpot(t2, {"action": "rejected", "link": LINK, "hit_id": by_table["T2"]["hit_id"]})
        checkpoint(t1, t2)
        wait_until(lambda: watcher.last().get("pending") == [], what="both settled")
        statuses = dict(
            psycopg.connect(dsn).execute("SELECT table_id, status FROM progressive_hits").fetchall()
        )
        assert one(dsn, "SELECT count(*) FROM progressive_journal WHERE kind = 'verified'") == 1
        assert statuses == {"T1": "paid", "T2": "rejected"}
        final = meter_row(dsn)
        assert final["meter_units"] == after_hits["meter_units"] + by_table["T2"]["amount_minor"] * UNIT
        # nothing created or lost: what is on the link == seeds + every contribution's shares - prizes + returned
        total_in = sum(a * (INC + RES) for a in amounts + stream)
        assert (
            final["meter_units"] + final["reserve_units"] + final["overflow_units"]
            == (final["seeded_units"] + total_in - final["prizes_units"] + final["returned_units"])
            and final["seeded_units"] == 3 * BASE * UNIT
        )

        # ---- dual control: no parameter change while running; suspend, then change ----
        new = link_config.load(link_toml(tmp_path, floor_broker, increment_bp=2000)).params
        ana, rui = control.Credential("ana", PASSWORD), control.Credential("rui", PASSWORD)
        with psycopg.connect(dsn, autocommit=True) as conn:
            with pytest.raises(
                control.Refused, match="running: parameters change only while it is suspended"
            ):
                control.set_params(conn, LINK, new, ana, rui, "raise the rate")
            with pytest.raises(control.Refused, match="two different supervisors"):
                control.suspend(conn, LINK, ana, ana, "one person")
            with pytest.raises(control.Refused, match="eva is a viewer"):
                control.suspend(conn, LINK, ana, control.Credential("eva", PASSWORD), "not a supervisor")
            with pytest.raises(control.Refused, match="wrong password"):
                control.suspend(conn, LINK, ana, control.Credential("rui", "guessed-password"), "guess")
            control.suspend(conn, LINK, ana, rui, "change the rate")
            wait_until(
                lambda: watcher.last().get("status") == "suspended", timeout=5, what="suspended published"
            )
            assert control.set_params(conn, LINK, new, ana, rui, "raise the rate").params_version == 2
            control.resume(conn, LINK, rui, ana, "rate changed")
            kinds = [
                r[0]
                for r in conn.execute(
                    "SELECT kind FROM progressive_journal WHERE link = %s ORDER BY seq", (LINK,)
                )
            ]
            assert kinds.count("refused") >= 4 + 2 and kinds[-3:] == ["suspend", "set", "resume"]
            assert journal.verify(conn, LINK) == []
            r = report.link_report(conn, LINK)
        wait_until(lambda: watcher.last().get("status") == "running", timeout=5, what="resumed published")
        assert r is not None and [h.table_id for h in r.last_wins] == ["T1"]
        text = report.to_text(r)
        assert "table T1 seat 2 round h1" in text and "journal   intact" in text
        assert {t.table_id: t.contributions for t in r.per_table} == {"T1": 82, "T2": 82}
        # every meter the tables saw verifies with the link's key; seq never repeats (across the restart too)
        seqs = [d["seq"] for d in watcher.docs]
        assert all(signing.verify(d, public) for d in watcher.docs) and len(set(seqs)) == len(seqs)
        # and the table's own check of the document (controller/jackpot/link_doc.py) takes every one, in order
        last = None
        for d in watcher.docs:
            raw = json.dumps(d).encode()
            last = link_doc.verify(raw, link=LINK, public_key=bytes.fromhex(public), last_seq=last).seq
        forged = watcher.last() | {"meter_minor": 1}
        assert not signing.verify(forged, public)
    finally:
        proc.kill()
        proc.wait(10)


def test_the_controller_refuses_to_start_on_other_software_or_parameters(dsn, floor_broker, tmp_path) -> None:
    config = link_toml(tmp_path, floor_broker)
    cfg = link_config.load(config)
    password = ACCOUNTS[f"progressive-{LINK}"]
    with pytest.raises(integrity.IntegrityError, match="not found"):
        Controller(cfg, dsn, password).start()
    doc = integrity.record(cfg.manifest, {})
    cfg.manifest.write_text(json.dumps(doc | {"software_sha256": "0" * 64}))
    with pytest.raises(integrity.IntegrityError, match="refusing to run"):
        Controller(cfg, dsn, password).start()
    integrity.record(cfg.manifest, {})
    Controller(cfg, dsn, password).start().stop()  # creates the link from link.toml
    changed = link_config.load(link_toml(tmp_path, floor_broker, base_minor=1))
    with pytest.raises(StartRefused, match="not the recorded version 1"):
        Controller(changed, dsn, password).start()
    first = Controller(cfg, dsn, password).start()
    try:
        with pytest.raises(StartRefused, match="another controller"):
            Controller(cfg, dsn, password).start()
    finally:
        first.stop()


def test_the_commands_refuse_with_a_reason_and_report(dsn, floor_broker, tmp_path, capsys) -> None:
    """``tablectl floor progressive``: a change while running is refused (exit 2, the reason, journaled); the
    report prints the link; a hostile round id reaches the CSV as text a spreadsheet does not run."""
    from controller.cli import main as tablectl
    from floor.archive import store
    from floor.progressive import ledger

    config = link_toml(tmp_path, floor_broker)
    with psycopg.connect(dsn) as conn:
        store.migrate(conn)
        with conn.transaction():
            ledger.create(conn.cursor(), link_config.load(config).params, ledger.LinkStatus.RUNNING, "test")
        for name in ("ana", "rui"):
            users.add_user(conn, name, users.Role.SUPERVISOR, PASSWORD)
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    common = ["--dsn", dsn, "--link", LINK, "--by", "ana", "--by-password-file", str(pw), "--with", "rui",
              "--with-password-file", str(pw), "--reason", "try"]  # fmt: skip
    assert tablectl(["floor", "progressive", "set", *common, "--config", str(config)]) == 2
    assert "set refused: link bank-a is running" in capsys.readouterr().err
    assert tablectl(["floor", "progressive", "correct", *common, "--to-minor", "1"]) == 2
    assert tablectl(["floor", "progressive", "suspend", *common]) == 0
    assert tablectl(["floor", "progressive", "correct", *common, "--to-minor", "60000"]) == 0
    capsys.readouterr()
    assert tablectl(["floor", "progressive", "report", "--dsn", dsn, "--link", LINK]) == 0
    out = capsys.readouterr().out
    assert (
        "meter     600.00 EUR (60000.0000 minor units)" in out
        and "suspended" in out
        and "journal   intact" in out
    )
    assert tablectl(["floor", "progressive", "report", "--dsn", dsn, "--link", LINK, "--csv"]) == 0
    assert "link,meter,,,,60000,600000000,suspended," in capsys.readouterr().out
    with psycopg.connect(dsn) as conn:
        kinds = [r[0] for r in conn.execute("SELECT kind FROM progressive_journal ORDER BY seq")]
        corrections = conn.execute(
            "SELECT delta_units, requested_by, approved_by FROM progressive_corrections"
        )
        assert kinds == ["refused", "refused", "suspend", "correct"]
        assert corrections.fetchall() == [(10_000 * UNIT, "ana", "rui")]
        alerts = conn.execute("SELECT table_id, message FROM floor_alerts WHERE kind = 'progressive_changed'"
                              " ORDER BY alert_id").fetchall()  # fmt: skip
        assert [t for t, _ in alerts] == ["T1", "T2", "T1", "T2"]  # each member table hears of each change
        assert "suspend by ana with rui (try); now suspended" in alerts[0][1]


def test_the_dashboards_link_page_is_for_supervisors_and_shows_text(dsn, floor_broker, tmp_path) -> None:
    """``/progressive?link=L``: no session 401, a viewer 403 (logged with who and why), a bad link name 400, a
    supervisor the page with the link's figures, under a CSP that runs no script."""
    from floor.progressive import ledger
    from tests.support.floor_web import api_login, dashboard, request, session_token

    with dashboard(dsn) as web:
        with psycopg.connect(dsn) as conn, conn.transaction():
            ledger.create(conn.cursor(), link_config.load(link_toml(tmp_path, floor_broker)).params,
                          ledger.LinkStatus.RUNNING, "test")  # fmt: skip
        assert request(web.port, "GET", f"/progressive?link={LINK}").status == 401
        viewer = session_token(api_login(web.port, "victor"))
        answer = request(web.port, "GET", f"/progressive?link={LINK}", token=viewer)
        assert answer.status == 403 and "supervisors only" in answer.json()["reason"]
        carol = session_token(api_login(web.port, "carol"))
        assert request(web.port, "GET", "/progressive?link=<b>", token=carol).status == 400
        assert request(web.port, "GET", "/progressive?link=nope", token=carol).status == 404
        page = request(web.port, "GET", f"/progressive?link={LINK}", token=carol)
        assert page.status == 200 and "script-src" not in page.headers["content-security-policy"]
        text = page.body.decode()
        assert "Linked progressive bank-a" in text and money(BASE, "EUR") in text and "<script" not in text
        with psycopg.connect(dsn) as conn:
            refused = conn.execute(
                "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused'"
            ).fetchall()
        assert ("victor", "/progressive: supervisors only (this account is viewer)") in refused
