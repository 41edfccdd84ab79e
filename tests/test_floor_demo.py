"""`tablectl demo --floor` as a newcomer runs it (issue 26): one command starts three emulated tables, each on its
own broker bridged to a floor broker, a private PostgreSQL, archive workers and the dashboard; it prints the URL
and a login and deals until stopped. Every table's rounds reach PostgreSQL (the archive only talks to the floor
broker, so they crossed each table's bridge); on SIGINT every process it started is gone, PostgreSQL's
directory with it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import psycopg
import pytest

from tablebench.procs import descendants, running
from tests.support.floor import wait_until

ROOT = Path(__file__).resolve().parent.parent
TABLES = ("T1", "T2", "T3")
pytestmark = pytest.mark.timeout(300)


class Output:
    """The demo's stdout, read as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def find(self, pattern: str) -> re.Match[str] | None:
        return next((m for line in list(self.lines) if (m := re.search(pattern, line))), None)

    def text(self) -> str:
        return "\n".join(self.lines)


def settled(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT table_id, count(*) FROM events WHERE topic = 'events/settlement' AND source = 'live' "
            "GROUP BY table_id"
        ).fetchall()
    return {t: n for t, n in rows}


@pytest.mark.parametrize("target", ["demo", "group"])
def test_the_floor_demo_archives_every_table_through_its_bridge_and_stops_everything_on_sigint(
    tmp_path, target
):
    """``demo``: SIGINT to the demo alone (`kill -INT`): it must stop what it started itself. ``group``: to its
    whole process group, as a terminal's Ctrl-C does: the children end at the same moment, which is still a stop
    (exit 130), not a failure."""
    env = {k: v for k, v in os.environ.items() if k not in ("FLOOR_DSN", "FLOOR_TEST_DSN")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--floor", "--workdir", str(tmp_path / "floor")],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,  # its own process group, as a terminal gives it
    )  # fmt: skip
    out = Output(proc)
    try:
        started_line = r"^floor demo: dealing until Ctrl-C on every table$"
        wait_until(lambda: out.find(started_line) is not None or proc.poll() is not None, 180,
                   "the floor demo to start")  # fmt: skip
        assert proc.poll() is None, out.text()
        url = out.find(r"^floor demo: dashboard (http://127\.0\.0\.1:\d+/)$")
        login = out.find(r"^floor demo: login (\S+) / (\S+) ")
        dsn = out.find(r"^floor demo: PostgreSQL (postgresql://\S+) ")
        assert url and login and dsn, out.text()
        assert ":5432/" not in dsn.group(1)  # its own server, not the machine's
        with urllib.request.urlopen(url.group(1), timeout=10) as page:
            assert page.status == 200
        wait_until(lambda: all(settled(dsn.group(1)).get(t, 0) >= 1 for t in TABLES), 180,
                   "a settled round of every table in PostgreSQL")  # fmt: skip

        def on_dashboard() -> dict[str, dict]:
            with urllib.request.urlopen(url.group(1) + "api/snapshot", timeout=10) as answer:
                return {t["table"]: t for t in json.load(answer)["tables"]}

        # the dashboard shows every table online with its last round (what a supervisor opens the URL for)
        wait_until(lambda: all(on_dashboard().get(t, {}).get("status") == "online"
                               and on_dashboard()[t].get("last_round") for t in TABLES), 60,
                   "every table online with a round on the dashboard")  # fmt: skip
        with psycopg.connect(dsn.group(1)) as conn:
            data_dir = Path(conn.execute("SHOW data_directory").fetchone()[0])
            tables = {r[0] for r in conn.execute("SELECT DISTINCT table_id FROM events WHERE site = 'demo'")}
        assert tables == set(TABLES)
        # the printed floor command works pasted into a fresh shell (no venv on PATH) against the demo's database
        alerts = out.find(r"^floor demo: the floor's alerts \(another terminal\): (.+)$")
        assert alerts, out.text()
        fresh = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", alerts.group(1)],
                               capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        started = descendants(proc.pid)
        # a postgres, the floor broker, per table a broker + shoe + controller, 2 archive workers, the dashboard
        assert len(started) >= 1 + 1 + 3 * len(TABLES) + 2 + 1, started
        if target == "demo":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(120) == 130, out.text()
        wait_until(
            lambda: not any(running(pid) for pid in started), 30, "every process the demo started to end"
        )
        assert not data_dir.exists(), "PostgreSQL's private directory outlived the demo"
        assert "floor demo: stopping everything it started" in out.text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
