"""The shipped broker configuration as shipped, every client over TLS (issue 26).

A throwaway CA issues the brokers' and a terminal's certificates. The table broker and the floor broker both run
``firmware_configs/mosquitto/mosquitto.conf`` with only its paths and port changed (asserted) and the ACL
rendered from the shipped template; the table broker also runs the bridge section ``controller/mqtt/floor_bridge.py``
renders, TLS to the floor broker. Connected over TLS, each with its real entry point: ``tablectl run`` (emulated
shoe on a pty), the pit terminal (``tablectl terminal --client-config``, Textual pilot), the alert console
(``tablectl alerts --client-config``, pilot), an archive worker (``tablectl floor archive --ca``) into PostgreSQL
and the dashboard (``tablectl floor web --ca``). A supervisor's signed ``ack_alert`` goes from the dashboard over
the floor broker and the bridge to the table, which checks the signature; its answer comes back the same way and
the console sees the alert acknowledged. A client with another CA, and one without TLS, are refused."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.broker import BrokerKind
from controller.cli import alerts as alerts_cli
from controller.cli import terminal as pit_cli
from controller.client import TableClient
from controller.config.endpoint import TlsConfig
from controller.mqtt.floor_bridge import load as load_bridge
from controller.mqtt.floor_bridge import render as render_bridge
from controller.terminal.alerts import AlertsApp
from controller.terminal.pit import PitApp
from controller.terminal.pit_render import banner
from tablebench.broker import free_port
from tablebench.procs import stop_process
from tablebench.stack import DEMO_PINS, TABLECTL, Stack, StackOptions
from tests.support.floor import temp_database
from tests.support.shipped_broker import PLACES, Pki, ShippedBroker, changed_lines, give_to_mosquitto

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="mosquitto not installed"),
]
SITE, TABLE = "demo", "demo1"
WAIT = 60.0  # a bound for a loaded machine, never a timing assertion
TABLE_USERS = {"table-demo1": "t-pw-1", "dealer": "d-pw-2", "supervisor1": "s-pw-3", "supervisor2": "s-pw-4"}
FLOOR_USERS = {"table-demo1": "ft-pw-5", "archive": "a-pw-6", "supervisor1": "fs-pw-7"}


class RunStack(Stack):
    """The table as systemd runs it: ``tablectl run --config`` (the emulated shoe on a pty, fake GPIO)."""

    def start_controller(self) -> None:
        with open(self.log_path, "ab") as log:
            self.controller_proc = subprocess.Popen(
                [*TABLECTL, "run", "--config", str(self.config_path)], stdout=log, stderr=subprocess.STDOUT
            )


def secret_file(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def top() -> Iterator[Path]:
    """A folder the mosquitto account can reach (pytest's own tmp folders are root's only)."""
    path = Path(tempfile.mkdtemp(prefix="tablectl-tls-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*TABLECTL, *args], stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )


async def until(what: str, check: Any, timeout: float = WAIT, *logs: Path) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await asyncio.to_thread(check)
        if got:
            return got
        if loop.time() > deadline:
            tails = "\n".join(
                f"--- {p}:\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists()
            )
            raise AssertionError(f"timed out waiting for {what}\n{tails}")
        await asyncio.sleep(0.2)


def http(url: str, body: dict[str, Any] | None = None, cookie: str = "") -> dict[str, Any]:
    """A request as the dashboard's page makes it (its origin, ``X-Floor: 1``, the session cookie)."""
    origin = "/".join(url.split("/")[:3])
    headers = {"Cookie": cookie} if cookie else {}
    if body is not None:
        headers |= {"X-Floor": "1", "Content-Type": "application/json", "Origin": origin}
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=30) as resp:
        return json.loads(resp.read()) | ({"cookie": resp.headers["Set-Cookie"]} if "login" in url else {})


def parsed(add_arguments: Any, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


async def test_the_shipped_brokers_and_every_client_over_tls(top: Path, tmp_path: Path) -> None:
    pki = Pki(top / "pki")
    table_cert, floor_cert = pki.issue("table-broker", server=True), pki.issue("floor-broker", server=True)
    terminal_cert = pki.issue("pit-terminal", server=False)
    give_to_mosquitto(pki.folder)
    tls = TlsConfig(pki.ca)
    floor = ShippedBroker(top / "floor-broker", pki.ca, floor_cert, FLOOR_USERS, SITE, kind=BrokerKind.FLOOR)
    # the table broker's bridge, rendered from the table's identity and the floor's bridge.toml
    (top / "bridge").mkdir()
    ident = top / "bridge" / "table.toml"
    ident.write_text(f'[table]\nid = "{TABLE}"\nsite = "{SITE}"\n')
    secret_file(top / "bridge" / "floor-password", FLOOR_USERS["table-demo1"])
    (top / "bridge" / "bridge.toml").write_text(
        f'[bridge]\nhosts = ["127.0.0.1:{floor.port}"]\nca = "{pki.ca}"\nusername = "table-demo1"\n'
        'password_file = "floor-password"\n'
    )
    section = render_bridge(load_bridge(ident, top / "bridge" / "bridge.toml"))
    table_broker = ShippedBroker(top / "table-broker", pki.ca, table_cert, TABLE_USERS, SITE, extra=section)
    for broker in (floor, table_broker):  # as shipped: only places and the port differ
        assert changed_lines(broker.config.removesuffix(section)) <= PLACES | {"listener"}
        assert "listener 8883" not in broker.config and "require_certificate false" in broker.config

    stack = RunStack(
        tmp_path / "stack",
        StackOptions(
            table_id=TABLE,
            site=SITE,
            jackpot=False,
            broker=(table_broker.host, table_broker.port),
            broker_tls=tls,
        ),
    )
    stack.users = dict(TABLE_USERS)
    procs: list[subprocess.Popen[bytes]] = []
    with temp_database() as dsn:
        try:
            stack.start()
            # ---- the floor: the schema (docs/floor.md), archive worker and dashboard, TLS to the floor broker ----
            subprocess.run([*TABLECTL, "floor", "migrate", "--dsn", dsn], check=True, capture_output=True)
            archive_log, web_log = tmp_path / "archive.log", tmp_path / "web.log"
            procs.append(
                spawn(["floor", "archive", "--dsn", dsn, "--host", "127.0.0.1", "--port", str(floor.port),
                       "--ca", str(pki.ca), "--username", "archive", "--worker", "tls"],
                      archive_log, {"FLOOR_ARCHIVE_PASSWORD": FLOOR_USERS["archive"]})
            )  # fmt: skip
            web_port = free_port()
            procs.append(
                spawn(["floor", "web", "--dsn", dsn, "--listen", f"127.0.0.1:{web_port}", "--broker-host",
                       "127.0.0.1", "--broker-port", str(floor.port), "--ca", str(pki.ca), "--username",
                       "supervisor1"],
                      web_log, {"FLOOR_WEB_PASSWORD": FLOOR_USERS["supervisor1"]})
            )  # fmt: skip
            subprocess.run([*TABLECTL, "floor", "user", "add", "alice", "--role", "supervisor", "--dsn", dsn,
                            "--password-file", "-"], input=b"alice-dashboard-pw\n", check=True)  # fmt: skip

            def archived() -> bool:  # the table's events crossed the bridge and the archive stored them
                with psycopg.connect(dsn) as conn:
                    row = conn.execute("SELECT count(*) FROM events WHERE table_id = %s", (TABLE,)).fetchone()
                return bool(row and row[0] > 0)

            await until("the table's events in the archive", archived, WAIT, archive_log, stack.log_path,
                        table_broker.folder / "mosquitto.log")  # fmt: skip

            # ---- the pit terminal, from a client configuration file (TLS, a client certificate too) ----
            secret_file(top / "terminal-password", TABLE_USERS["dealer"])
            (top / "terminal.toml").write_text(
                f'host = "127.0.0.1"\nport = {table_broker.port}\nca = "pki/ca.crt"\n'
                f'cert = "{terminal_cert.cert}"\nkey = "{terminal_cert.key}"\nusername = "dealer"\n'
                f'password_file = "terminal-password"\nsite = "{SITE}"\ntable = "{TABLE}"\n'
            )
            conn = pit_cli.connection(
                parsed(pit_cli.add_arguments, ["--client-config", str(top / "terminal.toml")])
            )
            assert (
                conn.tls == TlsConfig(pki.ca, terminal_cert.cert, terminal_cert.key)
                and conn.port == table_broker.port
            )
            pit = PitApp(conn)
            async with pit.run_test(size=(140, 46)) as pilot:
                await pit.client.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
                await pilot.press("g")  # a dealer command over TLS; the closed table answers with its reason
                for _ in range(int(WAIT / 0.1)):
                    if pit.message.startswith("refused"):
                        break
                    await pilot.pause(0.1)
                assert pit.message.startswith("refused: Next round:"), pit.message

            # ---- a forged supervisor command raises the table's command_rejected alert ----
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

            from controller.mqtt.signed_command import build_command

            forger = stack.client("supervisor1")
            await forger.connect(WAIT)
            body = build_command("alice", "", "supervisor", "open_table", {"profile": "pt-2001"},
                                 site=SITE, table=TABLE, private_key=Ed25519PrivateKey.generate())  # fmt: skip
            assert (await forger.request("supervisor", body, timeout=WAIT)).get("ok") is False
            await forger.close()

            # ---- the alert console, from its client configuration file ----
            secret_file(top / "console-password", TABLE_USERS["supervisor2"])
            (top / "console.toml").write_text(
                f'host = "localhost"\nca = "{pki.ca}"\nport = {table_broker.port}\nusername = "supervisor2"\n'
                f'password_file = "console-password"\nsite = "{SITE}"\n'
            )
            fleet = alerts_cli.fleet(
                parsed(alerts_cli.add_arguments,
                       ["--client-config", str(top / "console.toml"), "--key-dir", str(stack.key_dir)])
            )  # fmt: skip
            console = AlertsApp(fleet)
            async with console.run_test(size=(140, 30)) as pilot:
                await until("the alert on the console", lambda: [
                    r for r in fleet.open_alerts() if r.alert["kind"] == "command_rejected"])  # fmt: skip
                alert_id = next(
                    r.alert_id for r in fleet.open_alerts() if r.alert["kind"] == "command_rejected"
                )

                # ---- the dashboard shows it (archive -> PostgreSQL) and acknowledges it through the bridge ----
                base = f"http://127.0.0.1:{web_port}"

                session = await asyncio.to_thread(
                    http, f"{base}/api/login", {"user": "alice", "password": "alice-dashboard-pw"}
                )
                cookie = session["cookie"].split(";", 1)[0]

                def on_dashboard() -> bool:
                    try:
                        snap = http(f"{base}/api/snapshot", cookie=cookie)
                    except OSError:
                        return False
                    return any(
                        a["alert_id"] == alert_id and a["source"] == "table" for a in snap.get("alerts", [])
                    )

                await until("the alert on the dashboard", on_dashboard, WAIT, web_log)
                # alice signs on her own device (here: her key file and PIN); the dashboard only relays it
                command = build_command("alice", DEMO_PINS["alice"], "supervisor", "ack_alert",
                                        {"alert_id": alert_id}, site=SITE, table=TABLE,
                                        key_file=stack.key_dir / "alice.key")  # fmt: skip
                answer = await asyncio.to_thread(
                    http, f"{base}/api/ack", {"site": SITE, "table": TABLE, "command": command}, cookie
                )
                assert answer == {"ok": True}, answer  # the table's answer, back through the bridge
                await until("the acknowledgement on the console", lambda: any(
                    h.alert_id == alert_id and h.alert.get("acked_by") == "alice" for h in fleet.history))  # fmt: skip
                await pilot.pause(0.2)

            # ---- verification is on: another CA, or no TLS at all, gets no connection; the screens say why ----
            other = Pki(top / "other-ca", "another CA")
            wrong_ca = TableClient(
                table_broker.host,
                table_broker.port,
                username="dealer",
                password=TABLE_USERS["dealer"],
                prefix=stack.prefix,
                tls=TlsConfig(other.ca),
            )
            plain = TableClient(table_broker.host, table_broker.port, username="dealer",
                                password=TABLE_USERS["dealer"], prefix=stack.prefix)  # fmt: skip
            for refused in (wrong_ca, plain):
                with pytest.raises(TimeoutError):
                    await refused.connect(timeout=3)
                await refused.close()
            assert wrong_ca.last_error.startswith("TLS: certificate verify failed"), wrong_ca.last_error
            pit = PitApp(replace(conn, tls=TlsConfig(other.ca)))
            async with pit.run_test(size=(140, 46)) as pilot:
                for _ in range(int(WAIT / 0.1)):
                    if "certificate verify failed" in str(banner(pit.snapshot())):
                        break
                    await pilot.pause(0.1)
                assert str(banner(pit.snapshot())).startswith(
                    "BROKER UNREACHABLE (TLS: certificate verify failed"
                )
        finally:
            for proc in procs:
                stop_process(proc, timeout=15)
            stack.stop()
            table_broker.stop()
            floor.stop()
