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
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import expect

from tablebench.procs import descendants, running
from tests.support.floor import wait_until
from tests.support.floor_web import CHROMIUM, chromium, log_in

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

        # the printed login opens the dashboard (anonymous requests get nothing)
        base = url.group(1).rstrip("/")
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(base + "/api/snapshot", timeout=10)
        logged_in = urllib.request.urlopen(urllib.request.Request(
            base + "/api/login", data=json.dumps({"user": login.group(1), "password": login.group(2)}).encode(),
            headers={"Content-Type": "application/json", "X-Floor": "1", "Origin": base}), timeout=30)  # fmt: skip
        cookie = logged_in.headers["Set-Cookie"].split(";", 1)[0]

        def on_dashboard() -> dict[str, dict]:
            request = urllib.request.Request(base + "/api/snapshot", headers={"Cookie": cookie})
            with urllib.request.urlopen(request, timeout=10) as answer:
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


# ---- a table fault on the running demo (issue 38): one demo for the tests below -------------------------------

FAULTED = "T2"
ROUND_LINE = r"^{table}: round \S+:"


class RunningDemo:
    """`tablectl demo --floor` as a person runs it, its printed lines, and the commands it printed."""

    def __init__(self, proc: subprocess.Popen[str], out: Output) -> None:
        self.proc, self.out = proc, out

    def printed(self, pattern: str) -> str:
        found = self.out.find(pattern)
        assert found, self.out.text()
        return found.group(1)

    def rounds(self, table: str) -> int:
        return sum(1 for line in list(self.out.lines) if re.match(ROUND_LINE.format(table=table), line))

    def lines(self, pattern: str) -> int:
        return sum(1 for line in list(self.out.lines) if re.search(pattern, line))

    def paste(self, command: str) -> subprocess.CompletedProcess[str]:
        """A printed command pasted into a fresh shell (no venv on PATH)."""
        return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", command], capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip

    def fault_command(self, table: str, fault: str) -> str:
        printed = self.printed(r"^floor demo: cause a fault at a table \(jam, damaged or lid\): (.+)$")
        assert printed.endswith(f" fault {FAULTED} jam"), printed
        return printed[: -len(f"{FAULTED} jam")] + f"{table} {fault}"

    def clear_command(self, table: str) -> str:
        printed = self.printed(r"^floor demo: clear it as the chief inspector would: (.+)$")
        assert printed.endswith(f" clear {FAULTED}"), printed
        return printed[: -len(FAULTED)] + table

    def alive(self) -> bool:
        return self.proc.poll() is None


@pytest.fixture(scope="module")
def running_demo(tmp_path_factory) -> Iterator[RunningDemo]:
    workdir = tmp_path_factory.mktemp("demo") / "floor"
    env = {k: v for k, v in os.environ.items() if k not in ("FLOOR_DSN", "FLOOR_TEST_DSN")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--floor", "--workdir", str(workdir)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    out = Output(proc)
    try:
        wait_until(lambda: out.find(r"^floor demo: dealing until Ctrl-C") is not None or proc.poll() is not None,
                   180, "the floor demo to start")  # fmt: skip
        assert proc.poll() is None, out.text()
        demo = RunningDemo(proc, out)
        wait_until(lambda: all(demo.rounds(t) >= 1 for t in TABLES) or not demo.alive(), 180,
                   "a round on every table")  # fmt: skip
        assert demo.alive(), out.text()
        yield demo
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _inject(demo: RunningDemo, table: str, fault: str) -> None:
    """The printed fault command; a forced lid is refused while the lid is open for the round's cards (the
    shoe's answer): tried again a moment later, as a person would."""
    for _ in range(50):
        done = demo.paste(demo.fault_command(table, fault))
        if done.returncode == 0:
            return
        assert "refused" in done.stderr, done.stdout + done.stderr
        time.sleep(0.2)
    raise AssertionError(f"the shoe kept refusing {fault}: {done.stderr}")


@pytest.mark.parametrize("fault", ["jam", "damaged", "lid"])
def test_a_fault_on_one_table_pauses_it_while_the_others_deal_and_it_deals_again_once_cleared(
    running_demo, fault
):
    """Issue 38: a jam (PT-2001 r.51), a damaged card (r.51) or a forced lid (r.60) on T2: the demo prints that
    T2 paused (judged from what the table publishes), T1 and T3 go on settling rounds, the demo stays up; the
    printed clear command (the chief inspector's procedure, signed commands) clears it and T2 deals again."""
    demo = running_demo
    paused_before = demo.lines(rf"^{FAULTED}: demo: paused: ")
    _inject(demo, FAULTED, fault)
    # a damaged card pauses the table when it comes out (the next card drawn)
    wait_until(lambda: demo.lines(rf"^{FAULTED}: demo: paused: ") > paused_before or not demo.alive(), 60,
               f"{FAULTED} to pause for the {fault}")  # fmt: skip
    assert demo.alive(), demo.out.text()
    why = {"jam": "Shoe jam", "damaged": "damaged or unreadable card", "lid": "Lid opened while locked"}[
        fault
    ]
    assert why in [line for line in demo.out.lines if line.startswith(f"{FAULTED}: demo: paused: ")][-1]
    held = demo.rounds(FAULTED)
    others = {t: demo.rounds(t) for t in TABLES if t != FAULTED}
    wait_until(lambda: all(demo.rounds(t) >= n + 2 for t, n in others.items()) or not demo.alive(), 120,
               "the other tables to settle two more rounds")  # fmt: skip
    assert demo.alive(), demo.out.text()
    assert demo.rounds(FAULTED) <= held + 1  # at most the round that was settling when the fault came
    cleared = demo.paste(demo.clear_command(FAULTED))
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert "the table deals again" in cleared.stdout
    settled = demo.rounds(FAULTED)
    wait_until(lambda: demo.rounds(FAULTED) >= settled + 2 or not demo.alive(), 120,
               f"{FAULTED} to deal again")  # fmt: skip
    assert demo.alive() and "Traceback" not in demo.out.text(), demo.out.text()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
def test_a_supervisor_on_the_dashboard_acknowledges_the_alert_with_a_key_enrolled_as_the_page_says(
    running_demo,
):
    """Issue 38, as a floor supervisor in a browser: T2 jams; the jam's alert shows on the dashboard and the
    table's tile says it is faulted; the key made on this device is not enrolled yet, and the table says so
    ("your key is not enrolled at table T2", relayed to the page, not "not authorised"); the enrolment command
    the page shows, pasted into a fresh shell, enrols it at the demo's tables without a restart; the
    acknowledgement then goes through (signed in the browser, verified by T2); the chief inspector's printed
    clear command ends the jam and the page shows T2 dealing again."""
    demo = running_demo
    url = demo.printed(r"^floor demo: dashboard (http://127\.0\.0\.1:\d+/)$").rstrip("/")
    login = demo.out.find(r"^floor demo: login (\S+) / (\S+) ")
    assert login, demo.out.text()
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        log_in(page, url, login.group(1), login.group(2))
        page.click("#make-key")
        expect(page.locator("#pubkey")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
        tile = page.locator(f".table[data-table='{FAULTED}']")
        expect(tile).not_to_have_attribute("data-attention", "fault", timeout=30_000)

        _inject(demo, FAULTED, "jam")
        jam = page.locator(f".alert[data-kind='jam'][data-table='{FAULTED}']")
        jam.first.wait_for(timeout=60_000)  # live: the page was not reloaded
        expect(tile).to_have_attribute("data-attention", "fault", timeout=30_000)
        jam.first.locator("button.ack").click()
        expect(jam.first.locator(".result")).to_have_text(
            f"refused: your key is not enrolled at table {FAULTED}", timeout=30_000
        )

        enrol = page.inner_text("#enrol")
        assert enrol.endswith(f"--user {login.group(1)} --role supervisor --public-key "
                              f"{page.inner_text('#pubkey')}")  # fmt: skip
        enrolled = demo.paste(enrol)
        assert enrolled.returncode == 0, enrolled.stdout + enrolled.stderr
        while jam.count():
            before = jam.count()
            jam.first.locator("button.ack").click()
            expect(jam).to_have_count(before - 1, timeout=30_000)

        def last_round() -> str:
            snap = json.loads(page.evaluate("fetch('/api/snapshot').then(r => r.text())"))
            return str(next(t for t in snap["tables"] if t["table"] == FAULTED).get("last_round"))

        at_fault = last_round()
        cleared = demo.paste(demo.clear_command(FAULTED))
        assert cleared.returncode == 0, cleared.stdout + cleared.stderr
        expect(tile).not_to_have_attribute("data-attention", "fault", timeout=60_000)
        wait_until(lambda: last_round() != at_fault, 120, f"a new round of {FAULTED} on the dashboard")
    assert demo.alive(), demo.out.text()
