"""The table controller service, as systemd starts it (`tablectl run`: controller/cli/run.py).

Wiring only; every part does its own job elsewhere:
config + integrity → journal → GPIO (safe outputs first) → shoe driver → table controller (recovers from the
journal) → alerts → MQTT link + outbox publisher + command intake → jackpot sign (``JackpotWiring``) →
sd_notify READY once the serial link, the journal, the broker are all up; the watchdog is fed only while they
stay healthy. SIGTERM/SIGINT: outputs to their safe values (lid locked, light on), the lid locked on the
device, `offline` published, journal closed.
Its concerns live beside it in controller/service/ (docs/architecture.md, "The service").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import Any

from controller import sdnotify
from controller.audit.checkpoint import public_key_hex
from controller.config import TableConfig
from controller.config.integrity import PROFILE_NAME
from controller.gpio import GpioBoard
from controller.gpio.factory import make_board
from controller.jackpot.table import TableJackpot
from controller.journal import Journal
from controller.journal.checkpointer import Checkpointer
from controller.mqtt.alerts import AlertManager
from controller.mqtt.anchor import BrokerAnchor
from controller.mqtt.auth import Authenticator, AuthError, CredentialStore
from controller.mqtt.commands import CommandIntake
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.replay import ReplayServer
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.ops.status import StatusWriter, status_dir
from controller.service import status as service_status
from controller.service.alerts import AlertAdapter, BrokerAlertsReadback, escalate_while_journal_writes
from controller.service.commands import ServiceCommands
from controller.service.disk import DiskWatch
from controller.service.errors import StartupError
from controller.service.health import HealthLoop
from controller.service.integrity import (
    manifest_problems,
    raise_integrity_fault,
    recover_verified,
    verify_whole_journal,
)
from controller.service.jackpot import JackpotWiring
from controller.service.resources import link_config, open_audit_key, open_journal, open_nonce_store
from controller.service.software import publish_software
from controller.table.controller import TableController
from controller.table.core import TableCore
from controller.table.journal_io import JournalProblem, is_write_failure
from controller.table.messages import Publish
from controller.topics import Topics
from drivers.aio import cancel_tasks
from drivers.card_line import ShoeWithReader
from drivers.events import LockLid
from drivers.serial_port import resolve_port
from drivers.shoe import ShoeDriver
from drivers.usb_reader import PyUsbBackend, UsbCardReader

log = logging.getLogger("tablectl.service")


class TableService:
    def __init__(self, config: TableConfig, *, usb_backend: Any = None) -> None:
        self.config = config
        self.usb_backend = usb_backend  # a pyusb backend for [reader]; None: libusb (docs/reader.md)
        self.reader: UsbCardReader | None = None
        self.integrity_problems: list[str] = []
        self.board: GpioBoard | None = None
        self.journal: Journal | None = None
        self.shoe: ShoeDriver | None = None
        self.table: TableController | None = None
        self.alerts: AlertManager | None = None
        self.link: MqttLink | None = None
        self.publisher: OutboxPublisher | None = None
        self.checkpointer: Checkpointer | None = None
        self.replay: ReplayServer | None = None
        self.anchor: BrokerAnchor | None = None
        self.intake: CommandIntake | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = asyncio.Event()
        self.jackpot: JackpotWiring | None = None
        self.unjournaled: UnjournaledPublisher | None = None
        self.alert_sink: AlertAdapter | None = None
        self.disk: DiskWatch | None = None
        self.commands: ServiceCommands | None = None
        self.startup_problem: JournalProblem | None = None  # the journal failed a write during start-up
        # `tablectl status` reads it (under systemd from /run/tablectl: controller/ops/status.py)
        self.status_writer = StatusWriter(status_dir(Path(config.table.state_dir)), None)
        self._pending_faults: set[asyncio.Task[None]] = set()

    # ---- start-up ----
    async def start(self) -> None:
        cfg = self.config
        self.integrity_problems = manifest_problems(cfg)

        # Outputs to their safe values before anything else can act (PT-2001 r.51, r.60).
        try:
            self.board = make_board(cfg.gpio, loop=asyncio.get_running_loop())  # outputs already safe
        except (RuntimeError, OSError) as exc:  # no GPIO library / no /dev/gpiomem: one line, exit 3
            raise StartupError(f"gpio ({cfg.gpio.backend}): {exc}") from None

        state_dir = Path(cfg.table.state_dir)
        audit_key = open_audit_key(cfg, state_dir)
        self.journal = open_journal(cfg, state_dir, public_key_hex(audit_key.public_key()))
        head_at_open = self.journal.last_seq  # before anything is written (BrokerAnchor)
        self.alerts = AlertManager(self.journal, escalate_after_s=cfg.alerts.escalate_after_s)
        self.disk = DiskWatch(cfg.table.state_dir, cfg.journal, self.alerts)  # free space and inodes

        try:
            port = resolve_port(cfg.shoe.port)
        except FileNotFoundError:  # not plugged in yet: the driver resolves it again on every attempt
            port = cfg.shoe.port
        self.shoe = ShoeDriver(
            port,
            baudrate=cfg.shoe.baudrate,
            ack_timeout=cfg.shoe.ack_timeout_ms / 1000,
            max_retries=cfg.shoe.retries,
            silence_timeout=cfg.shoe.silence_timeout_ms / 1000,
            heartbeat_interval=cfg.shoe.heartbeat_interval_ms / 1000,
        )
        if cfg.reader.enabled:  # cards from the separate USB reader, the rest from the shoe (docs/reader.md)
            r = cfg.reader
            usb = PyUsbBackend(r.vendor_id, r.product_id, r.serial, backend=self.usb_backend)
            self.reader = UsbCardReader(usb, poll_ms=r.read_timeout_ms)
            self.shoe = ShoeWithReader(self.shoe, self.reader)  # type: ignore[assignment]
        self.link = MqttLink(link_config(cfg.mqtt), Topics(cfg.table.site, cfg.table.id, cfg.mqtt.prefix))
        self.publisher = OutboxPublisher(self.journal, self.link)
        self.unjournaled = UnjournaledPublisher(self.link, cfg.table.id)  # after the publisher: see its doc
        self.alert_sink = AlertAdapter(self.alerts, self.unjournaled)
        self.table = TableController(
            self.journal,
            self.shoe,
            board=self.board,
            alerts=self.alert_sink,
            core=TableCore(self._load_profile, jackpot=TableJackpot()),  # the meter lives in the core's state
            unjournaled=self._publish_unjournaled,
            journal_back=self._journal_recovered,
        )
        self.jackpot = JackpotWiring(cfg, self.table, self.board)
        self.journal.add_failure_listener(self._journal_write_failed)

        self.publisher.on_forged = self._publish_refused
        self.publisher.start()
        self.checkpointer = Checkpointer(
            self.journal,
            audit_key,
            site=cfg.table.site,
            table=cfg.table.id,
            interval_s=cfg.audit.checkpoint_interval_s if cfg.audit else 60,
        )
        self.checkpointer.start()
        self.replay = ReplayServer(
            self.journal, self.link, retention_days=cfg.journal.event_retention_days
        )  # cmd/replay: kept events served again (docs/reliability.md)
        self.replay.on_forged = lambda event_id, reason: self._publish_refused("replay", event_id, reason)
        self.replay.start()
        self.anchor = BrokerAnchor(
            self.journal,
            self.link,
            public_key_hex(audit_key.public_key()),
            self._anchor_mismatch,
            start_head=head_at_open,
        )  # the broker's retained checkpoint: a journal cut short while stopped shows up
        self.anchor.start()
        # the broker's retained alerts/open read back once: alerts it holds that the journal never got are
        # journaled, then the open list is the journal's again (issue 27 §5)
        self.alerts_readback = BrokerAlertsReadback(
            self.alerts, self.link, lambda: set(self.table.core.faults)
        )
        self.alerts_readback.start()
        try:
            credentials = CredentialStore.load(cfg.supervisors.credentials_file)
        except AuthError as exc:  # unreadable, or the old HMAC format: one line, outputs stay safe (exit 3)
            raise StartupError(f"supervisor credentials: {exc}") from None
        nonces, nonce_problem = open_nonce_store(self.journal)
        if nonce_problem is not None:  # the disk filled up or went read-only: the journal_io fault
            self.startup_problem = nonce_problem
        auth = Authenticator(credentials, nonces)
        self.commands = ServiceCommands(
            cfg, self.journal, self.table, self.alerts, self.jackpot, self.integrity_problems
        )
        self.commands.disk = self.disk  # no new round on a nearly full journal disk
        self.intake = CommandIntake(
            handler=self.commands.handle, auth=auth, alerts=self.alerts, link=self.link
        )
        self.intake.start()

        if self.integrity_problems:
            self.alert_sink.raise_(
                "config_integrity",
                "critical",
                "configuration or firmware profile differs from the recorded digests; the table stays closed",
                {"problems": self.integrity_problems},
            )

        # the chain since the last signed checkpoint first: when it is broken only the verified part becomes
        # state (issue 27 §2)
        await recover_verified(self.table, self.journal, cfg, self.checkpointer)  # issue 27 §2
        publish_software(cfg, self.journal, self.unjournaled)
        await self.shoe.start()
        await self.link.start()
        await self.jackpot.start()  # after the recovery: the sign's link enters the core as an input
        self._tasks.append(
            asyncio.create_task(
                escalate_while_journal_writes(self.alerts, self.table), name="alerts-escalation"
            )
        )
        self._tasks.append(asyncio.create_task(HealthLoop(self, self._journal_back).run(), name="health"))
        self._tasks.append(asyncio.create_task(self.disk.run(), name="journal-disk"))
        for task in self._tasks:
            task.add_done_callback(_report_death)
        # One-off (not a watched task: it ends when done): the whole chain, in the background.
        verify = asyncio.create_task(
            verify_whole_journal(self.table, self.journal), name="journal-full-verify"
        )
        self._pending_faults.add(verify)
        verify.add_done_callback(self._pending_faults.discard)
        problem = self.table.journal_problem or self.startup_problem
        if (
            problem is not None
        ):  # one line an operator can act on (issue 14 item 3); the table is in the fault
            log.critical("%s: started in the journal_io fault (docs/deploy.md)", problem.text)
        log.info("table %s started (profile %s)", cfg.table.id, cfg.table.profile)

    def _journal_write_failed(self, exc: BaseException) -> None:
        """Any part's failed journal write (called inside the failing transaction): the fault, soon after."""
        if not is_write_failure(exc) or self.table is None:
            return
        with contextlib.suppress(RuntimeError):  # no loop: start-up, handled there
            task = asyncio.get_running_loop().create_task(self.table.journal_failed_elsewhere(exc))
            self._pending_faults.add(task)
            task.add_done_callback(self._pending_faults.discard)

    def _load_profile(self, name: str) -> Any:
        """For a session opened without pinning only (pinned sessions carry their profile's text): a name, from
        the configured profiles directory, never a path."""
        from controller.rules.profiles import ProfileError, load_profile

        if not PROFILE_NAME.fullmatch(name):
            raise ProfileError(f"profile {name[:64]!r}: a profile is named, never a path")
        return load_profile(str(self.config.table.profile_path.parent / f"{name}.toml"))

    def _publish_unjournaled(self, fx: Publish) -> None:
        if self.unjournaled is not None:
            self.unjournaled.publish(fx.topic, fx.event_type, fx.text or fx.data, retain=fx.retain)

    def _anchor_mismatch(self, seq: int | None, reason: str) -> None:
        """The broker's retained checkpoint contradicts the journal (cut short while stopped): the fault."""
        assert self.table is not None
        task = asyncio.get_running_loop().create_task(
            raise_integrity_fault(self.table, reason, {"record": seq, "check": "broker_checkpoint"})
        )
        self._pending_faults.add(task)
        task.add_done_callback(self._pending_faults.discard)

    def _publish_refused(self, topic: str, event_id: int, reason: str) -> None:
        if self.alerts is not None:
            self.alerts.raise_alert(
                "journal_integrity", "critical", reason, details={"topic": topic, "event_id": event_id}
            )

    # ---- health, readiness, watchdog (status.py; the loop: health.py) ----
    def link_problems(self) -> list[str]:
        """What keeps the table from being ready: the external links that are down."""
        return service_status.link_problems(self.shoe, self.reader, self.link)

    def alive(self) -> bool:
        """The service's own parts work (``service_status.alive``): the watchdog is fed only then."""
        return service_status.alive(self.journal, self.table, self.dead_tasks)

    def dead_tasks(self) -> list[str]:
        return service_status.dead_tasks(self._tasks, self.shoe, self.intake)

    def status_text(self) -> str:
        """What ``systemctl status`` shows (sd_notify STATUS=): the faults first, then the links."""
        links = self.link_problems() if self.journal is not None else ["starting"]
        return service_status.status_text(self.table, self.dead_tasks(), links, self.config.table.id)

    async def _journal_back(self) -> None:
        """While the journal fault's input is owed: commit it as soon as the journal writes again (any
        successful commit does too); then the alerts raised without it; the unjournaled retained copies are
        superseded by the journaled ones."""
        table = self.table
        assert table is not None
        if table.journal_problem is not None or table._deferred:
            try:
                if not await table.retry_journal():
                    return
            except Exception as exc:
                log.error("journal retry failed: %s", exc)
                return
        try:
            self._journal_recovered()
        except Exception as exc:
            log.error("owed alerts not journaled yet: %s", exc)

    def _journal_recovered(self) -> None:
        """The journal writes again: the alerts raised without it now through it; the unjournaled retained
        copies are superseded by the journaled ones. (The shoe is asked again for the events it could not
        commit by the table itself: controller/table/shoe_resend.py.)"""
        if self.alert_sink is not None and self.alert_sink.owed:
            self.alert_sink.flush()
        if self.unjournaled is not None and self.unjournaled.retained:
            self.unjournaled.forget()
            if self.alerts is not None:  # the retained open list is the journal's book again
                self.alerts.publish_open()

    # ---- shutdown ----
    async def stop(self) -> None:
        """Safe outputs first, then each part on its own: one that fails (a journal on a broken disk, a task
        that died) is logged and never keeps the others from stopping (issue 14 item 3)."""
        sdnotify.stopping("stopping: lid locked, light on")
        if self.table is not None:
            self.table._safe_outputs()
        await cancel_tasks([*self._tasks, *self._pending_faults], swallow_errors=True)
        if self.jackpot is not None:
            await _guarded("jackpot", self.jackpot.stop())
        if self.table is not None:
            await _guarded("table", self.table.stop())  # safe outputs
        if self.checkpointer is not None:
            self.checkpointer.stop()
            with contextlib.suppress(
                Exception
            ):  # anchor the last records (sent at the next start if not now)
                self.checkpointer.write()
        if self.shoe is not None:
            if getattr(self.shoe, "shoe", self.shoe).connected:  # the shoe's lid, whatever the reader does
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.shoe.command(LockLid()), 1.0)
            await _guarded("shoe", self.shoe.stop())
        if self.intake is not None:
            await _guarded("intake", self.intake.stop())
        if self.replay is not None:
            await _guarded("replay", self.replay.stop())
        if self.link is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.link.stop(), 3.0)
        if self.board is not None:
            with contextlib.suppress(Exception):
                self.board.close()
        if self.journal is not None:
            with contextlib.suppress(Exception):
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


async def _guarded(what: str, coro: Any) -> None:
    try:
        await coro
    except Exception:
        log.exception("stopping %s failed", what)


def _report_death(task: asyncio.Task[Any]) -> None:
    """A background task must never end silently (issue 14 item 3: the shoe-event task died unnoticed)."""
    if task.cancelled():
        return
    exc = task.exception()
    log.critical("task %s ended%s", task.get_name(), f": {exc!r}" if exc else "")
