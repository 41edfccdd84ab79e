"""`tablectl run`: the table controller service, as systemd starts it.

Wiring only; every part does its own job elsewhere:
config + integrity → journal → GPIO (safe outputs first) → shoe driver → table controller (recovers from the
journal) → alerts → MQTT link + outbox publisher + command intake → jackpot sign (``JackpotWiring``) →
sd_notify READY once the serial link, the journal, the broker are all up; the watchdog is fed only while they
stay healthy. SIGTERM/SIGINT: outputs to their safe values (lid locked, light on), the lid locked on the
device, `offline` published, journal closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import sdnotify
from controller.config import ConfigError, TableConfig, load_config
from controller.config.integrity import verify as verify_integrity
from controller.gpio import GpioBoard
from controller.gpio.factory import make_board
from controller.journal import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, CredentialStore, NonceStore
from controller.mqtt.commands import CommandIntake, CommandRejected, CommandRequest
from controller.mqtt.link import LinkConfig, MqttLink
from controller.mqtt.link import TlsConfig as LinkTls
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.topics import Topics
from controller.table.controller import TableController
from controller.table.core import TableCore
from controller.table.effects import Rejected
from controller.table.jackpot import TableJackpot
from drivers.events import LockLid
from drivers.serial_port import resolve_port
from drivers.shoe import ShoeDriver

log = logging.getLogger("tablectl.service")

# Supervisor actions handled by the alert book rather than the table state machine.
ALERT_ACTIONS = {"ack_alert"}


@dataclass
class Overrides:
    """Set by the demo and the HIL bench: run the real service against emulated parts."""

    shoe_port: str | None = None
    mqtt_host: str | None = None
    mqtt_port: int | None = None
    mqtt_username: str | None = None
    mqtt_password: str | None = None
    gpio_control: str | None = None  # unix socket through which a bench drives the fake GPIO board


class AlertAdapter:
    """The table controller's alert sink, backed by the journaled AlertManager."""

    def __init__(self, manager: AlertManager) -> None:
        self.manager = manager

    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None:
        rule = str(details.get("rule", "")) if isinstance(details, dict) else ""
        self.manager.raise_alert(kind, severity, reason, rule=rule, details=details)


class TableService:
    def __init__(self, config: TableConfig, overrides: Overrides | None = None) -> None:
        self.config = config
        self.ov = overrides or Overrides()
        self.integrity_problems: list[str] = []
        self.board: GpioBoard | None = None
        self.journal: Journal | None = None
        self.shoe: ShoeDriver | None = None
        self.table: TableController | None = None
        self.alerts: AlertManager | None = None
        self.link: MqttLink | None = None
        self.publisher: OutboxPublisher | None = None
        self.intake: CommandIntake | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = asyncio.Event()
        self._ready_sent = False
        self._gpio_server: Any = None
        self.jackpot: JackpotWiring | None = None

    # ---- start-up ----
    async def start(self) -> None:
        cfg = self.config
        self.integrity_problems = self._check_integrity()

        # Outputs to their safe values before anything else can act (PT-2001 r.51, r.60).
        self.board = make_board(cfg.gpio, loop=asyncio.get_running_loop())  # outputs already safe
        if self.ov.gpio_control:
            from controller.gpio.fake_server import FakeBoardServer

            self._gpio_server = FakeBoardServer(self.board, self.ov.gpio_control)
            await self._gpio_server.start()

        state_dir = Path(cfg.table.state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(state_dir / "journal.db", table_id=cfg.table.id)
        self.alerts = AlertManager(self.journal, escalate_after_s=cfg.alerts.escalate_after_s)

        port = self.ov.shoe_port or resolve_port(cfg.shoe.port)
        self.shoe = ShoeDriver(
            port,
            baudrate=cfg.shoe.baudrate,
            ack_timeout=cfg.shoe.ack_timeout_ms / 1000,
            max_retries=cfg.shoe.retries,
            silence_timeout=cfg.shoe.silence_timeout_ms / 1000,
            heartbeat_interval=cfg.shoe.heartbeat_interval_ms / 1000,
        )
        from controller.rules.profiles import load_profile

        self.table = TableController(
            self.journal,
            self.shoe,
            board=self.board,
            alerts=AlertAdapter(self.alerts),
            core=TableCore(load_profile, jackpot=TableJackpot()),  # the meter lives in the core's state
        )
        self.jackpot = JackpotWiring(cfg, self.table, self.board)

        self.link = MqttLink(self._link_config(), Topics(cfg.table.site, cfg.table.id, cfg.mqtt.prefix))
        self.publisher = OutboxPublisher(self.journal, self.link)
        self.publisher.start()
        auth = Authenticator(CredentialStore.load(cfg.supervisors.credentials_file), NonceStore(self.journal))
        self.intake = CommandIntake(
            handler=self._handle_command, auth=auth, alerts=self.alerts, link=self.link
        )
        self.intake.start()

        if self.integrity_problems:
            self.alerts.raise_alert(
                "config_integrity",
                "critical",
                "configuration or firmware profile differs from the recorded digests; the table stays closed",
                details={"problems": self.integrity_problems},
            )

        await self.table.start()  # recover from the journal, re-assert safe outputs
        await self.shoe.start()
        await self.link.start()
        await self.jackpot.start()  # after the recovery: the sign's link enters the core as an input
        self._tasks.append(asyncio.create_task(self.alerts.run(), name="alerts-escalation"))
        self._tasks.append(asyncio.create_task(self._health(), name="health"))
        log.info("table %s started (profile %s)", cfg.table.id, cfg.table.profile)

    def _check_integrity(self) -> list[str]:
        manifest = self.config.table.integrity_manifest
        if not Path(manifest).exists():
            return [f"integrity manifest {manifest} is missing (record it with `tablectl config record`)"]
        try:
            return verify_integrity(self.config.path, manifest)
        except Exception as exc:  # an unreadable manifest is a failed check, not a crash
            return [f"integrity manifest {manifest} unreadable: {exc}"]

    def _link_config(self) -> LinkConfig:
        m = self.config.mqtt
        password = self.ov.mqtt_password if self.ov.mqtt_password is not None else (m.password() or "")
        tls = LinkTls(ca=m.tls.ca, cert=m.tls.cert, key=m.tls.key) if m.tls else None
        return LinkConfig(
            host=self.ov.mqtt_host or m.host,
            port=self.ov.mqtt_port or m.port,
            username=self.ov.mqtt_username or m.username or "",
            password=password,
            client_id=m.client_id,
            keepalive=m.keepalive_s,
            tls=tls,
        )

    # ---- commands (MQTT) ----
    async def _handle_command(self, req: CommandRequest) -> dict[str, Any]:
        assert self.table is not None and self.alerts is not None
        if req.action in ALERT_ACTIONS:
            try:
                alert = self.alerts.acknowledge(int(req.args.get("alert_id", -1)), req.user)
            except (ValueError, KeyError) as exc:
                raise CommandRejected(str(exc)) from None
            return {"alert": alert.to_dict()}
        if req.action == "open_table" and self.integrity_problems:
            raise CommandRejected(
                "configuration integrity check failed: " + "; ".join(self.integrity_problems)
            )
        args = dict(req.args)
        if req.action == "open_table" and self.jackpot is not None:
            args["jackpot"] = self.jackpot.config_for_open()  # the config, never the caller, sets it
        try:
            return await self.table.handle_command(req.role, req.user, req.action, args)
        except Rejected as exc:
            raise CommandRejected(exc.reason) from None

    # ---- health, readiness, watchdog ----
    def link_problems(self) -> list[str]:
        """What keeps the table from being ready: the external links that are down."""
        problems = []
        if not (self.shoe and self.shoe.connected):
            problems.append("shoe link down")
        if not (self.link and self.link.connected):
            problems.append("broker unreachable")
        return problems

    def alive(self) -> bool:
        """The service's own parts work: the journal answers and the table's tasks run. External links (shoe,
        broker) do not count: restarting cannot mend them, so an outage degrades STATUS but keeps the watchdog
        fed; a hung event loop or a dead task stops it and systemd restarts the service."""
        if self.journal is None or self.table is None:
            return False
        try:
            self.journal.last_seq_on_disk()
        except Exception:
            return False
        return self.table.running()

    async def _health(self) -> None:
        interval = sdnotify.watchdog_interval()
        period = min(interval / 2, 1.0) if interval else 1.0
        while True:
            if self.alive():
                sdnotify.watchdog()
            problems = self.link_problems() if self.journal is not None else ["starting"]
            if not problems:
                if not self._ready_sent:
                    sdnotify.ready(f"table {self.config.table.id}: shoe, journal and broker up")
                    self._ready_sent = True
            else:
                sdnotify.status("degraded: " + ", ".join(problems))
            # Until READY, look often: systemd (and a restart after kill -9) waits on it.
            await asyncio.sleep(period if self._ready_sent else 0.05)

    # ---- shutdown ----
    async def stop(self) -> None:
        sdnotify.stopping("stopping: lid locked, light on")
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.jackpot is not None:
            await self.jackpot.stop()
        if self.table is not None:
            await self.table.stop()  # safe outputs
        if self.shoe is not None:
            if self.shoe.connected:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.shoe.command(LockLid()), 1.0)
            await self.shoe.stop()
        if self.intake is not None:
            await self.intake.stop()
        if self.link is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.link.stop(), 3.0)
        if self._gpio_server is not None:
            await self._gpio_server.stop()
        if self.board is not None:
            self.board.close()
        if self.journal is not None:
            self.journal.close()

    async def run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()


# ---- progressive jackpot (PT-2001 r.38-50) ----
class JackpotWiring:
    """The jackpot's I/O around the pure core (``controller.table.jackpot``): the ``[jackpot]`` config into
    ``open_table``, the chip-slot sensors (r.41a) and the sign's link in as journaled inputs, and the sign
    fed from the committed state after every commit (the meter as it increments, WIN on a hit, a fault text).
    """

    FAULT_TEXT = "JACKPOT CLOSED"

    def __init__(self, config: TableConfig, table: TableController, board: Any) -> None:
        self.config = config
        self.table = table
        self.board = board
        self.driver: Any = None  # drivers.display.driver.DisplayDriver
        self._kick = asyncio.Event()
        self._shown: tuple[Any, ...] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._pending: set[asyncio.Task[Any]] = set()

    def config_for_open(self) -> dict[str, Any] | None:
        """Injected into every ``open_table``: journaled with it, so a replay applies the same parameters."""
        parsed = self.config.jackpot.parsed
        return parsed.to_dict() if parsed is not None and self.config.jackpot.enabled else None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for pin in self.config.gpio.pins:
            if pin.name.startswith("chip_slot_"):

                def on_edge(name: str, value: bool) -> None:  # may run on the GPIO library's thread
                    loop.call_soon_threadsafe(self._spawn, self._chip_edge(name, value))

                with contextlib.suppress(Exception):
                    self.board.on_edge(pin.name, on_edge)
        self.table.journal.add_commit_listener(lambda _tx: self._kick.set())
        d = self.config.display
        if not (d.enabled and self.config.jackpot.enabled):
            return
        from drivers.display.driver import DisplayDriver

        try:
            port = resolve_port(d.port)
        except Exception:  # not there yet: the driver's ping loop reopens it when it appears
            port = d.port
        self.driver = DisplayDriver(
            port,
            baudrate=d.baudrate,
            ack_timeout=d.ack_timeout_ms / 1000,
            retries=d.retries,
            on_connection=self._on_connection,
        )
        self._tasks.append(asyncio.create_task(self._feed(), name="jackpot-display"))
        await self.driver.start()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self.driver is not None:
            await self.driver.stop()

    async def _chip_edge(self, name: str, value: bool) -> None:
        try:
            await self.table.submit({"type": "gpio", "name": name, "value": value})
        except Exception:
            log.exception("chip slot %s failed", name)

    def _on_connection(self, connected: bool) -> None:
        self._spawn(self._link(connected))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._pending.add(task)  # keep a reference until done (asyncio holds tasks weakly)
        task.add_done_callback(self._pending.discard)

    async def _link(self, connected: bool) -> None:
        """The sign's link enters the core as an input (journaled, replayable): lost → unplayable (r.41)."""
        if connected:
            self._shown = None  # the sign may have restarted: show the meter again
        try:
            await self.table.submit({"type": "jackpot_display", "connected": connected})
        except Exception:
            log.exception("jackpot display link input failed")
        self._kick.set()

    def wanted(self) -> tuple[Any, ...]:
        """What the sign should show for the committed state."""
        jp = self.table.core.jackpot
        meter = getattr(jp, "meter", None)
        if meter is None or not getattr(jp, "enabled", False):
            return ("FLT", self.FAULT_TEXT)
        if meter.pending:  # the largest frozen award (r.49: until paid)
            hit = max(meter.pending, key=lambda h: (h.amount, -h.seat))
            return ("WIN", hit.seat, hit.amount, meter.currency)
        return ("MTR", meter.display_value, meter.currency)

    async def _feed(self) -> None:
        while True:
            await self._kick.wait()
            self._kick.clear()
            want = self.wanted()
            if want == self._shown or self.driver is None or not self.driver.connected:
                continue  # a reconnection kicks again
            try:
                ok = await self.driver.send(*want)
            except Exception as exc:  # DisplayError / ProtocolError: a bug, logged, never fatal
                log.error("jackpot display refused %s: %s", want, exc)
                ok = False
            if ok:
                self._shown = want


# ---- CLI ----
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="table configuration (TOML)")
    parser.add_argument("--shoe-port", help="override [shoe] port (e.g. the emulator's pty)")
    parser.add_argument("--mqtt-host", help="override [mqtt] host")
    parser.add_argument("--mqtt-port", type=int, help="override [mqtt] port")
    parser.add_argument("--mqtt-username", help="override [mqtt] username")
    parser.add_argument("--mqtt-password", help="override the [mqtt] password (tests and demo only)")
    parser.add_argument("--gpio-control", help="unix socket to drive the fake GPIO board (bench)")
    parser.add_argument("-v", "--verbose", action="store_true")


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("transitions").setLevel(logging.WARNING)  # the library's per-state chatter: not at INFO
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"tablectl run: bad configuration: {exc}")
        return 2
    overrides = Overrides(
        shoe_port=args.shoe_port,
        mqtt_host=args.mqtt_host,
        mqtt_port=args.mqtt_port,
        mqtt_username=args.mqtt_username,
        mqtt_password=args.mqtt_password,
        gpio_control=args.gpio_control,
    )
    asyncio.run(TableService(config, overrides).run_forever())
    return 0
