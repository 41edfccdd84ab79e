"""The real service process (`tablectl run`) with a real broker and the emulated shoe on a pty (Stack)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from controller.client import CommandFailed
from controller.mqtt.schemas import validate_message
from tablebench.gpio_server import call as gpio_call
from tablebench.stack import DEMO_PINS, Stack, StackOptions


async def _online(stack: Stack, user: str = "dealer"):
    client = stack.client(user)
    await client.connect()
    try:
        wanted = {"table", "round", "lid", "jam", "shoe"}
        await client.wait_for(lambda v: v.status == "online" and wanted <= set(v.states), 20)
    except TimeoutError:
        raise AssertionError("service not online:\n" + stack.controller_log()) from None
    return client


@pytest.fixture
def stack(tmp_path):
    st = Stack(tmp_path, StackOptions(jackpot=False)).start()
    yield st
    st.stop()


async def test_service_comes_up_publishes_valid_state_and_stops_safe(stack: Stack) -> None:
    client = await _online(stack)
    try:
        for name, data in client.view.states.items():
            doc = {"event_id": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "state", "table": "demo1"}
            validate_message(f"state/{name}", json.dumps({**doc, "data": data}).encode())
        assert client.view.states["lid"]["locked"] is True  # PT-2001 r.60: locked until the rules open it
        assert (await gpio_call(stack.gpio_socket, "read", name="lid_lock"))["value"] is True
        assert stack.stop_controller() == 0  # SIGTERM: clean stop
        await client.wait_for(lambda v: v.status == "offline", 10)
    finally:
        await client.close()


async def test_changed_configuration_keeps_the_table_closed_with_an_alert(stack: Stack) -> None:
    """issue 6: configuration and profiles are checked against the recorded SHA-256 digests at start-up."""
    stack.stop_controller()
    with stack.config_path.open("a") as f:
        f.write("# edited after the digests were recorded\n")
    stack.start_controller()
    client = await _online(stack, "supervisor1")
    try:
        await client.wait_for(lambda v: any(a["kind"] == "config_integrity" for a in v.alerts_open), 10)
        with pytest.raises(CommandFailed, match="integrity"):
            await client.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="pt-2001")
        assert client.view.states["table"]["state"] == "closed"
    finally:
        await client.close()


async def test_dealer_input_refused_with_the_rule_and_nothing_changes(stack: Stack) -> None:
    client = await _online(stack)
    try:
        before = dict(client.view.states["table"])
        with pytest.raises(CommandFailed, match="not allowed in state closed"):
            await client.dealer("place_bet", seat=1, amount=1000)
        await asyncio.sleep(0.3)
        assert client.view.states["table"]["state"] == before["state"] == "closed"
    finally:
        await client.close()


async def test_service_restarts_after_the_table_raised_an_alert(stack: Stack) -> None:
    """The core's alert requests and the AlertManager's alert records share one journal: a restart reads
    both."""
    from tablebench.emulator.control_client import ControlClient

    client = await _online(stack, "supervisor1")
    ctl = await ControlClient.connect(stack.shoe_control)
    try:
        await ctl.jam()  # a jam while the table is closed: an alert (PT-2001 r.51)
        await client.wait_for(lambda v: any(a["kind"] == "jam" for a in v.alerts_open), 10)
        stack.kill_controller()
        stack.start_controller()
        await client.wait_for(lambda v: v.status == "offline", 10)
        await client.wait_for(lambda v: v.status == "online", 20)
        assert any(a["kind"] == "jam" for a in client.view.alerts_open)  # still open after the restart
    finally:
        await ctl.close()
        await client.close()


async def test_ready_after_links_up_and_watchdog_fed_through_a_broker_outage(tmp_path, monkeypatch) -> None:
    """sd_notify (issue 9): READY once shoe, journal and broker are up; a broker outage degrades STATUS but
    keeps WATCHDOG=1 coming (a restart cannot mend an outage); the messages arrive on a real unix socket."""
    import socket

    sock_path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", sock_path)
    monkeypatch.setenv("WATCHDOG_USEC", "400000")  # fed every 0.2 s
    received: list[str] = []

    async def collect(until, timeout: float = 20.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not until() and loop.time() < deadline:
            try:
                received.extend(sock.recv(4096).decode().splitlines())
            except BlockingIOError:
                await asyncio.sleep(0.05)
        assert until(), f"notifications so far: {received[-10:]}\n{st.controller_log()}"

    st = Stack(tmp_path / "stack", StackOptions(jackpot=False)).start()
    try:
        await collect(lambda: "READY=1" in received)
        st.broker.stop()
        mark = len(received)
        await collect(lambda: any("broker unreachable" in m for m in received[mark:]))
        after = len(received)
        await collect(lambda: received[after:].count("WATCHDOG=1") >= 3)  # still fed during the outage
    finally:
        st.stop()
        sock.close()


async def test_state_software_is_published_retained_and_matches_tablectl_version(stack: Stack) -> None:
    """Contract 8 / issue 13 §2: the version (pyproject's, the same `tablectl --version` prints) and the
    digests in force, retained on state/software, valid against its schema."""
    import subprocess
    from importlib.metadata import version

    from controller.audit.keys import public_key_from_manifest
    from controller.config.integrity import compute_digests, read_manifest
    from tablebench.stack import ROOT, TABLECTL

    client = await _online(stack)
    try:
        await client.wait_for(lambda v: "software" in v.states, 20)
        doc = client.view.states["software"]
        envelope = {"event_id": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "state", "table": "demo1"}
        validate_message("state/software", json.dumps({**envelope, "data": doc}).encode())
        printed = subprocess.run(
            [*TABLECTL, "--version"], capture_output=True, text=True, cwd=ROOT, check=True
        )
        assert printed.stdout.strip() == f"tablectl {doc['version']}"
        assert doc["version"] == version("blackjack-table-controller")
        assert doc["profile"] == "pt-2001" and doc["rule_book"] == "PT-2001"
        assert doc["digests"] == compute_digests(stack.config_path)
        assert doc["digests"] == read_manifest(stack.workdir / "integrity.json")
        # the key that signs the audit checkpoints, as recorded in the manifest (docs/security.md)
        assert doc["audit_public_key"] == public_key_from_manifest(stack.workdir / "integrity.json")
        assert doc["audit_public_key"] is not None
    finally:
        await client.close()


async def test_a_dead_task_stops_the_watchdog_and_shows_in_status_a_journal_fault_does_not(tmp_path) -> None:
    """Issue 14 item 3: the shoe-event task died silently and the watchdog stayed fed. Now a dead task is
    logged, named in STATUS and stops WATCHDOG=1 (systemd restarts the service); a journal that cannot be
    written is a fault in STATUS but keeps the watchdog fed (a restart cannot mend a disk)."""
    from controller.config import load_config
    from controller.journal import Journal
    from controller.service.table_service import TableService
    from controller.shell.controller import TableController
    from controller.table.journal_io import JournalProblem
    from tablebench.stack import DEMO_CONFIG

    svc = TableService(load_config(DEMO_CONFIG, check_files=False))
    svc.journal = Journal(tmp_path / "journal.db")
    svc.table = TableController(svc.journal)
    await svc.table.start()
    try:
        assert svc.alive()
        svc.table.journal_problem = JournalProblem("disk_full", "database or disk is full")
        assert svc.alive() and "FAULT journal_io: journal disk full" in svc.status_text()

        async def pump() -> None:
            raise RuntimeError("the shoe-event task died")

        dead = asyncio.create_task(pump(), name="table-pump")
        with contextlib.suppress(RuntimeError):
            await dead
        svc.table._tasks.append(dead)
        assert not svc.alive()
        svc._tasks.append(dead)
        assert "task died: table-pump" in svc.status_text()
    finally:
        await svc.table.stop()  # never raises for the dead task: safe outputs first
        svc.journal.close()


async def test_a_part_that_never_stops_does_not_keep_the_journal_open(tmp_path, monkeypatch) -> None:
    """A part stuck on a dead peer (here the shoe's stop never returns) is left after PART_STOP_TIMEOUT_S: the
    parts after it still stop and the journal is closed, inside systemd's TimeoutStopSec=20, with the outputs
    safe first (PT-2001 r.51, r.60)."""
    from controller.config import load_config
    from controller.journal import Journal
    from controller.service import shutdown
    from controller.service.table_service import TableService
    from controller.shell.controller import TableController
    from tablebench.stack import DEMO_CONFIG

    monkeypatch.setattr(shutdown, "PART_STOP_TIMEOUT_S", 0.5)
    svc = TableService(load_config(DEMO_CONFIG, check_files=False))
    svc.journal = Journal(tmp_path / "journal.db")
    svc.table = TableController(svc.journal)
    await svc.table.start()
    closed: list[str] = []
    never = asyncio.Event()

    class StuckShoe:
        connected = False

        async def stop(self) -> None:
            await never.wait()

    class Intake:
        async def stop(self) -> None:
            closed.append("intake")

    svc.shoe = StuckShoe()  # type: ignore[assignment]  # a stand-in: only stop() is called
    svc.intake = Intake()  # type: ignore[assignment]  # likewise
    journal_close = svc.journal.close
    monkeypatch.setattr(svc.journal, "close", lambda: (closed.append("journal"), journal_close()))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(svc.stop(), 10)
    assert closed == ["intake", "journal"]
    assert loop.time() - started < 5


def test_the_stop_bounds_fit_inside_systemds_stop_timeout() -> None:
    """Every part's bounded stop plus the lid's lock fits inside TimeoutStopSec of the shipped unit, so systemd
    never kills the service before the journal is closed (PT-2001 r.51: the lid locked, the record kept). Counts
    the parts the stop sequence really guards, from its source."""
    import configparser
    import inspect
    from pathlib import Path

    from controller.service import shutdown

    guarded = inspect.getsource(shutdown.stop_service).count("await _guarded(")
    assert guarded >= 6  # jackpot, table, shoe, intake, replay, link
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read(Path(__file__).resolve().parents[1] / "systemd" / "tablectl.service")
    stop_timeout = float(unit["Service"]["TimeoutStopSec"])
    assert guarded * shutdown.PART_STOP_TIMEOUT_S + shutdown.LOCK_LID_TIMEOUT_S < stop_timeout
