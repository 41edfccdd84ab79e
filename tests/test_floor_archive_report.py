"""`tablectl floor archive` says what it does (issue 26): at start what it consumes (broker, subscriptions, account)
and where it stores (the database, never its password); then a line of figures every `--status-interval`
(stored, duplicates, rejected, retries, lag, open gaps, re-fetches, missing) and the same figures in a JSON status
file and a Prometheus textfile; `--quiet` keeps only warnings. Real mosquitto, real PostgreSQL, the real command
as a subprocess; a gap makes a re-fetch and a hostile message a rejection, so each figure can be seen move."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tablebench.broker import Broker
from tests.support.floor import FLOOR_USERS, StandInTable, wait_until

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2-not-for-logs"


def archive(dsn: str, broker: Broker, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "controller.cli", "floor", "archive", "--dsn", f"{dsn} password={SECRET}",
           "--host", broker.host, "--port", str(broker.port), "--username", "archive", "--worker", "r1",
           "--grace", "0.3", *extra]  # fmt: skip
    env = {**os.environ, "FLOOR_ARCHIVE_PASSWORD": FLOOR_USERS["archive"]}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def status(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def test_the_archive_logs_what_it_consumes_and_stores_then_its_figures_and_writes_them(
    dsn, floor_broker, tmp_path
):
    status_file, metrics_file = tmp_path / "archive.json", tmp_path / "archive.prom"
    proc = archive(dsn, floor_broker, "--status-interval", "0.3", "--status-file", str(status_file),
                   "--metrics-file", str(metrics_file))  # fmt: skip
    table = None
    try:
        wait_until(
            lambda: status(status_file).get("counters", {}).get("connected") is True, 60, "a connected worker"
        )
        table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T1")
        for i in range(4):
            table.publish("events/card", "card", {"round_id": "r1", "code": "AS", "i": i})
        table.publish(
            "events/card", "card", {"round_id": "r1", "code": "KD"}, deliver=False
        )  # a gap: re-fetched
        for i in range(3):
            table.publish("events/card", "card", {"round_id": "r1", "code": "2C", "i": i})
        table.publish_raw("events/card", b"\xff not an envelope")  # hostile: refused and counted
        table.flush()

        lags: list[dict] = []  # each interval's lag, as the status file showed it

        def done() -> bool:
            doc = status(status_file)
            lags.append(doc.get("lag") or {})
            c = doc.get("counters", {})
            return c.get("stored") == 8 and c.get("refetch_answers", 0) >= 1 and c.get("rejected") == 1

        wait_until(done, 60, "every event stored, the gap re-fetched, the hostile message counted")
        doc = status(status_file)
        assert doc["format"] == "tablectl-floor-archive/1" and doc["worker"] == "r1"
        assert doc["broker"] == f"{floor_broker.host}:{floor_broker.port}"
        assert doc["counters"]["refetch_requests"] >= 1 and doc["counters"]["missing_alerts"] == 0
        assert any(lag.get("events", 0) >= 1 and lag["max_s"] >= lag["p50_s"] >= 0 for lag in lags), lags
        assert SECRET not in json.dumps(doc)
        # the status file is written first, the metrics file right after it: wait for the same interval's
        wait_until(lambda: 'stored_total{worker="r1"} 8' in metrics_file.read_text(), 30, "the metrics file")
        metrics = metrics_file.read_text()
        assert 'tablectl_floor_archive_stored_total{worker="r1"} 8' in metrics
        assert 'tablectl_floor_archive_rejected_total{worker="r1"} 1' in metrics
        assert "# TYPE tablectl_floor_archive_lag_max_seconds gauge" in metrics
    finally:
        if table is not None:
            table.close()
        err = stop(proc)
    assert SECRET not in err
    start = re.search(r"archive worker r1 \(tablectl [^)]+\): consumes (\S+) and .+ from the floor broker (\S+) "
                      r"\(no TLS\) as archive; stores into (\S+); status every 0\.3 s to (.+)$", err, re.M)  # fmt: skip
    assert start, err
    assert start.group(1) == "$share/floor-archive/casino/+/table/+/#"
    assert start.group(2) == f"{floor_broker.host}:{floor_broker.port}"
    assert start.group(3).startswith("postgresql://postgres@127.0.0.1:") and "dbname" not in start.group(3)
    assert str(status_file) in start.group(4) and str(metrics_file) in start.group(4)
    figures = re.findall(r"archive worker r1: stored (\d+) \(\+\d+ in 0\.3 s\), duplicates \d+, rejected (\d+), "
                         r"retries \d+; (lag[^;]+); open gaps \d+, re-fetches (\d+) \(answered \d+\), "
                         r"missing alerted 0; (?:not )?repairing, (?:connected|NOT CONNECTED)", err)  # fmt: skip
    assert len(figures) >= 2, err
    assert figures[-1][0] == "8" and figures[-1][1] == "1" and int(figures[-1][3]) >= 1
    assert any(f[2].startswith("lag p50 ") for f in figures)


def test_a_quiet_archive_logs_no_figures_but_still_writes_its_status(dsn, floor_broker, tmp_path):
    status_file = tmp_path / "quiet.json"
    proc = archive(
        dsn, floor_broker, "--quiet", "--status-interval", "0.2", "--status-file", str(status_file)
    )
    try:
        wait_until(lambda: status(status_file).get("counters", {}).get("connected") is True, 60, "a status")
    finally:
        err = stop(proc)
    assert " INFO " not in err and "consumes" not in err, err


def test_a_verbose_archive_also_gives_each_tables_figures(dsn, floor_broker, tmp_path):
    status_file = tmp_path / "verbose.json"
    proc = archive(
        dsn, floor_broker, "--verbose", "--status-interval", "0.2", "--status-file", str(status_file)
    )
    table = None
    try:
        wait_until(lambda: status(status_file).get("counters", {}).get("connected") is True, 60, "a status")
        table = StandInTable(floor_broker.host, floor_broker.port, "S1", "T4")
        for i in range(2):
            table.publish("events/card", "card", {"round_id": "r1", "code": "AS", "i": i})
        table.flush()
        wait_until(
            lambda: status(status_file).get("counters", {}).get("stored") == 2, 60, "two events stored"
        )
    finally:
        if table is not None:
            table.close()
        err = stop(proc)
    assert re.search(r"DEBUG table S1/T4: 2 live events in 0\.2 s, lag p50 [\d.]+ s max [\d.]+ s", err), err
