"""`tablectl status` and the Prometheus textfile, from the real service (emulated shoe, real mosquitto)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from controller.ops import status as st
from controller.table.machine import FAULT_STATES
from tablebench.demo_session import prepare_session
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import ROOT, SERVICE, TABLECTL, Stack, StackOptions

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\n"])*"'
SAMPLE = re.compile(rf"^({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)?\}})? (\S+)$")


def parse_prometheus(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """A strict reader of the text exposition format (0.0.4): every sample's family announced by HELP and TYPE
    first, names and labels well-formed, values numbers, no family repeated. Raises ValueError otherwise."""
    assert text.endswith("\n"), "must end with a newline"
    families: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    helped: set[str] = set()
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if not re.fullmatch(NAME, name) or name in helped:
                raise ValueError(f"bad or repeated HELP: {line!r}")
            helped.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            if kind not in ("gauge", "counter", "untyped", "summary", "histogram") or name in typed:
                raise ValueError(f"bad TYPE: {line!r}")
            typed.add(name)
            families[name] = {}
        else:
            m = SAMPLE.match(line)
            if not m:
                raise ValueError(f"not a sample: {line!r}")
            name, labels, value = m.groups()
            if name not in helped or name not in typed:
                raise ValueError(f"{name}: sample before its HELP and TYPE")
            pairs = tuple(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels or ""))
            if pairs in families[name]:
                raise ValueError(f"duplicate sample {line!r}")
            families[name][pairs] = float(value)
    return families


def test_the_parser_rejects_what_prometheus_would():
    good = '# HELP x_a a\n# TYPE x_a gauge\nx_a{site="s"} 1\n'
    assert parse_prometheus(good) == {"x_a": {(("site", "s"),): 1.0}}
    for bad in (
        'x_a{site="s"} 1\n',  # no HELP/TYPE
        "# HELP x_a a\n# TYPE x_a gauge\nx_a{site=s} 1\n",  # unquoted label
        "# HELP x_a a\n# TYPE x_a gauge\nx_a one\n",  # not a number
        "# HELP x-a a\n# TYPE x-a gauge\nx-a 1\n",  # bad name
    ):
        with pytest.raises((ValueError, AssertionError)):
            parse_prometheus(bad)


def one(families, name: str, **labels: str) -> float:
    for pairs, value in families[name].items():
        d = dict(pairs)
        if all(d.get(k) == v for k, v in labels.items()):
            return value
    raise KeyError((name, labels))


def status(config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TABLECTL, "status", "--config", str(config), *flags],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def until(cond, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)  # polling interval, not a wait for something to have happened
    raise AssertionError(f"timed out waiting for {what}")


async def unplug(control: str, seconds: float) -> None:
    async with await ControlClient.connect(control) as ctl:
        await ctl.unplug(seconds)


def start(stack: Stack, prom: Path) -> subprocess.Popen[bytes]:
    log = open(stack.workdir / "controller.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            [*SERVICE, "--config", str(stack.config_path), "--gpio-control", stack.gpio_socket,
             "--metrics-file", str(prom)],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    finally:
        log.close()


def test_status_and_metrics_follow_the_running_service(tmp_path):
    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False))
    prom = tmp_path / "textfile" / "tablectl.prom"
    proc = None
    try:
        stack.start_broker()
        stack.start_parts()
        # before the service ever ran: not running, exit 1, one line
        run = status(stack.config_path)
        assert run.returncode == 1 and "not running" in run.stderr and "Traceback" not in run.stderr
        proc = start(stack, prom)

        def all_up():
            r = status(stack.config_path, "--json")
            if r.returncode != 0:
                return None
            doc = json.loads(r.stdout)
            return doc if doc["shoe_link_up"] and doc["broker_connected"] else None

        doc = until(all_up, "status: shoe and broker up")
        assert doc["table"] == "demo1" and doc["site"] == "demo" and doc["pid"] == proc.pid
        assert doc["journal_records"] > 0 and doc["journal_bytes"] > 0
        human = status(stack.config_path)
        assert human.returncode == 0, human.stderr
        assert "shoe:    up" in human.stdout and "broker:  connected" in human.stdout
        assert len(human.stdout.splitlines()) <= 24  # one screen
        fams = until(lambda: prom.exists() and parse_prometheus(prom.read_text()), "the .prom file")
        labels = {"site": "demo", "table": "demo1"}
        assert one(fams, "tablectl_shoe_link_up", **labels) == 1
        assert one(fams, "tablectl_broker_connected", **labels) == 1
        assert one(fams, "tablectl_up", **labels) == 1
        assert one(fams, "tablectl_journal_records", **labels) >= doc["journal_records"]
        assert {dict(p)["fault"] for p in fams["tablectl_fault_active"]} == set(FAULT_STATES)
        version = subprocess.run([*TABLECTL, "--version"], capture_output=True, text=True, cwd=ROOT).stdout
        assert dict(next(iter(fams["tablectl_info"])))["version"] in version
        # the same through `tablectl status --prometheus`
        assert one(parse_prometheus(status(stack.config_path, "--prometheus").stdout), "tablectl_up") == 1

        # a fault: the shoe unplugged mid-session (link_down holds, lid locked, until a supervisor clears it)
        assert one(fams, "tablectl_fault_active", fault="link_down", **labels) == 0
        asyncio.run(prepare_session(stack, "pt-2001", lambda line: None))
        asyncio.run(unplug(stack.shoe_control, 2.0))

        def fault_shown():
            f = parse_prometheus(prom.read_text())
            return f if one(f, "tablectl_fault_active", fault="link_down", **labels) == 1 else None

        fams = until(fault_shown, "fault_active{fault=link_down} 1 in the .prom file")
        doc = json.loads(status(stack.config_path, "--json").stdout)
        assert "link_down" in doc["faults"]
        for fault in FAULT_STATES:
            assert one(fams, "tablectl_fault_active", fault=fault) == (1 if fault in doc["faults"] else 0)
        assert "faults:  link_down" in status(stack.config_path).stdout

        # the shoe goes away for good (the emulator dies): the link shows down in the file and the command
        stack.shoe_proc.send_signal(signal.SIGKILL)
        stack.shoe_proc.wait()
        Path(stack.shoe_device).unlink(missing_ok=True)  # its symlink: a reused pty number is not the shoe

        def link_down():
            f = parse_prometheus(prom.read_text())
            return f if one(f, "tablectl_shoe_link_up", **labels) == 0 else None

        until(link_down, "shoe_link_up 0 in the .prom file")
        human = until(
            lambda: (r := status(stack.config_path)).returncode == 0 and "shoe:    DOWN" in r.stdout and r,
            "shoe DOWN in tablectl status",
        )
        assert "shoe link down" in human.stdout

        # the service stops: status says so at once (its pid is gone), exit 1
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        stopped = status(stack.config_path)
        assert stopped.returncode == 1 and "NOT RUNNING" in stopped.stdout
        assert one(parse_prometheus(status(stack.config_path, "--prometheus").stdout), "tablectl_up") == 0
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        stack.stop()


def test_a_stale_or_foreign_status_file_is_not_taken_for_a_running_service(tmp_path):
    doc = st.Status("s", "t", "0", 1, 0.0, time.time() - 3600, "x", True, True, 1, 1, None, None, 0)
    (tmp_path / st.STATUS_FILE).write_text(doc.to_json())
    run = subprocess.run(
        [*TABLECTL, "status", "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 1 and "NOT RUNNING" in run.stdout
    (tmp_path / st.STATUS_FILE).write_text('{"format": "something else"}')
    run = subprocess.run(
        [*TABLECTL, "status", "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 1 and "not a tablectl status document" in run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_under_systemd_the_status_goes_to_the_runtime_directory_that_operators_can_read(
    tmp_path, monkeypatch
):
    """docs/deploy.md §8: the unit's RuntimeDirectory (/run/tablectl, 0755) holds status.json (0644), so an
    operator outside group tablectl (which reads the journal and /etc/tablectl) can run `tablectl status`; it
    needs no readable configuration then, and of two status documents the fresher one is shown."""
    from controller.cli import status as status_cli

    state, runtime = tmp_path / "state", tmp_path / "run"
    state.mkdir()
    runtime.mkdir()
    assert st.status_dir(state, {"RUNTIME_DIRECTORY": f"{runtime}:/elsewhere"}) == runtime
    assert st.status_dir(state, {}) == state
    unit = (ROOT / "systemd" / "tablectl.service").read_text()
    assert "RuntimeDirectory=tablectl\n" in unit and "RuntimeDirectoryMode=0755\n" in unit

    now = time.time()
    fresh = st.Status("s", "t", "0", os.getpid(), now - 5, now, "running", True, True, 1, 1, None, None, 0)
    st.write_atomic(runtime / st.STATUS_FILE, fresh.to_json())
    assert (runtime / st.STATUS_FILE).stat().st_mode & 0o777 == 0o644
    monkeypatch.setattr(st, "SYSTEMD_RUNTIME_DIR", runtime)
    args = argparse.Namespace(
        config=str(tmp_path / "unreadable.toml"), state_dir=None, json=True, prometheus=False
    )
    assert status_cli.main(args) == 0  # no configuration needed

    old = st.Status("s", "t", "0", os.getpid(), now - 50, now - 40, "old", True, True, 1, 1, None, None, 0)
    st.write_atomic(state / st.STATUS_FILE, old.to_json())
    assert status_cli._read_freshest([state, runtime]).text == "running"
    assert status_cli._read_freshest([state]).text == "old"
