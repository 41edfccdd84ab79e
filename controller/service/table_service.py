"""The table controller service, as systemd starts it (`tablectl run`: controller/cli/run.py).

Wiring only; every part does its own job elsewhere. ``start`` is one step a part, in this order: the
integrity manifest → GPIO outputs to their safe values → audit key and journal → alerts and the disk watch →
the card line (shoe.py) → MQTT link, outbox and unjournaled publishers, the alert sink → table controller and
the jackpot sign's wiring → outbox started → audit trail (audit_trail.py) → the broker's alerts read back →
command intake (intake.py) → the integrity alert → recovery from the journal, the software and players documents → shoe
link, broker and jackpot sign started → the watched loops: the health loop sends sd_notify READY once the
journal and the broker are up (a shoe not plugged in is said, not waited for: the shoe watch raises its alert
and the driver takes the shoe when it appears), and feeds the watchdog only while the service is alive →
the whole chain verified in the background. SIGTERM/SIGINT: shutdown.py (outputs safe first, the lid locked
on the device, `offline` published, the journal closed).
Its concerns live beside it in controller/service/ (docs/architecture.md, "The service").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from pathlib import Path
from typing import Any

from controller.audit.checkpoint import public_key_hex
from controller.config import TableConfig
from controller.config.integrity import PROFILE_NAME
from controller.gpio import GpioBoard
from controller.gpio.factory import make_board
from controller.jackpot.table import TableJackpot
from controller.journal import Journal, VerifyResult
from controller.journal.checkpointer import Checkpointer
from controller.mqtt.alerts import AlertManager
from controller.mqtt.anchor import BrokerAnchor
from controller.mqtt.commands import CommandIntake
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.replay import ReplayServer
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.ops.status import StatusWriter, status_dir
from controller.service import status as service_status
from controller.service.alerts import AlertAdapter, BrokerAlertsReadback, escalate_while_journal_writes
from controller.service.audit_trail import start_audit_trail
from controller.service.commands import ServiceCommands
from controller.service.disk import DiskWatch
from controller.service.errors import StartupError
from controller.service.health import HealthLoop, retry_owed_journal_writes
from controller.service.intake import start_command_intake
from controller.service.integrity import (
    manifest_problems,
    raise_integrity_fault,
    recover_verified,
    verify_whole_journal,
)
from controller.service.jackpot import JackpotWiring
from controller.service.players import publish_players
from controller.service.resources import link_config, open_audit_key, open_journal
from controller.service.shoe import build_card_line
from controller.service.shoe_watch import ShoeWatch
from controller.service.shutdown import stop_service
from controller.service.software import publish_software
from controller.shell.controller import TableController
from controller.table.core import TableCore
from controller.table.journal_io import JournalProblem, is_write_failure
from controller.table.messages import Publish
from controller.topics import Topics
from drivers.shoe import ShoeDriver
from drivers.usb_reader import UsbCardReader

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
        # the journal records this start raised the integrity fault for (start-up check, broker's checkpoint,
        # whole chain): each break is raised once, so a supervisor's clear is not undone by the same break found
        # again by another check seconds later
        self.breaks_raised: set[int] = set()
        self.startup_problem: JournalProblem | None = None  # the journal failed a write during start-up
        # `tablectl status` reads it (under systemd from /run/tablectl: controller/ops/status.py)
        self.status_writer = StatusWriter(status_dir(Path(config.table.state_dir)), None)
        self._pending_faults: set[asyncio.Task[None]] = set()

    # ---- start-up: one step a part, in this order ----
    async def start(self) -> None:
        """Outputs safe first; READY=1 comes from the health loop, started last, once the journal and the broker
        are up, the shoe plugged in or not (docs/deploy.md). A step that cannot go on raises ``StartupError``."""
        cfg = self.config
        self.integrity_problems = manifest_problems(cfg)
        self.board = self._safe_board()
        journal, audit_key = self._open_journal()
        head_at_open = journal.last_seq  # before anything is written (BrokerAnchor)
        alerts = self._watch_alerts_and_disk(journal)
        self.shoe, self.reader = build_card_line(cfg, self.usb_backend)
        link, sink = self._build_link(journal, alerts)
        table = self._build_table(journal, self.shoe, self.board, sink)
        self._start_outbox()
        self.checkpointer, self.replay, self.anchor = start_audit_trail(
            cfg, journal, link, audit_key, head_at_open,
            on_forged=self._publish_refused, on_mismatch=self._anchor_mismatch,
        )  # fmt: skip
        self._start_alerts_readback(alerts, link, table)
        self.commands, self.intake, self.startup_problem = start_command_intake(
            cfg, journal, table, alerts, link,
            jackpot=self.jackpot, disk=self.disk, integrity_problems=self.integrity_problems,
        )  # fmt: skip
        self._raise_integrity_alert(sink)
        at_startup = await self._recover(journal, table, self.checkpointer)
        if not at_startup.ok and at_startup.first_bad_seq is not None:
            self.breaks_raised.add(at_startup.first_bad_seq)
        await self._connect()
        self._start_loops(alerts, sink, table)
        self._start_full_verify(journal, table)
        self._log_started(table)

    def _safe_board(self) -> GpioBoard:
        """Outputs to their safe values before anything else can act (PT-2001 r.51, r.60)."""
        gpio = self.config.gpio
        try:
            return make_board(gpio, loop=asyncio.get_running_loop())  # outputs already safe
        except (RuntimeError, OSError) as exc:  # no GPIO library / no /dev/gpiomem: one line, exit 3
            raise StartupError(f"gpio ({gpio.backend}): {exc}") from None

    def _open_journal(self) -> tuple[Journal, Any]:
        """The audit key (it signs the checkpoints) and the journal that records its public half."""
        state_dir = Path(self.config.table.state_dir)
        audit_key = open_audit_key(self.config, state_dir)
        self.journal = open_journal(self.config, state_dir, public_key_hex(audit_key.public_key()))
        return self.journal, audit_key

    def _watch_alerts_and_disk(self, journal: Journal) -> AlertManager:
        """The alerts, journaled, and the watch on the journal disk's free space and inodes."""
        cfg = self.config
        self.alerts = AlertManager(journal, escalate_after_s=cfg.alerts.escalate_after_s)
        self.disk = DiskWatch(cfg.table.state_dir, cfg.journal, self.alerts)
        return self.alerts

    def _build_link(self, journal: Journal, alerts: AlertManager) -> tuple[MqttLink, AlertAdapter]:
        """The broker link (not connected yet), the outbox publisher, the unjournaled publisher (after the
        publisher: see its doc) and the table's alert sink."""
        t = self.config.table
        self.link = MqttLink(link_config(self.config.mqtt), Topics(t.site, t.id, self.config.mqtt.prefix))
        self.publisher = OutboxPublisher(journal, self.link)
        self.unjournaled = UnjournaledPublisher(self.link, t.id)
        self.alert_sink = AlertAdapter(alerts, self.unjournaled)
        return self.link, self.alert_sink

    def _build_table(
        self, journal: Journal, shoe: ShoeDriver, board: GpioBoard, sink: AlertAdapter
    ) -> TableController:
        """The table controller and its core, the jackpot sign's wiring; any failed journal write is the fault."""
        self.table = TableController(
            journal,
            shoe,
            board=board,
            alerts=sink,
            core=TableCore(self._load_profile, jackpot=TableJackpot()),  # the meter lives in the core's state
            unjournaled=self._publish_unjournaled,
            journal_back=sink.journal_back,  # the journal writes again
        )
        self.jackpot = JackpotWiring(self.config, self.table, board, self.link)
        journal.add_failure_listener(self._journal_write_failed)
        return self.table

    def _start_outbox(self) -> None:
        """Journaled events to the broker; a record that fails its check is refused and alerted."""
        assert self.publisher is not None
        self.publisher.on_forged = self._publish_refused
        self.publisher.start()

    def _start_alerts_readback(self, alerts: AlertManager, link: MqttLink, table: TableController) -> None:
        """The broker's retained alerts/open read back once: alerts it holds that the journal never got are
        journaled, then the open list is the journal's again (issue 27 §5)."""
        self.alerts_readback = BrokerAlertsReadback(alerts, link, lambda: set(table.core.faults))
        self.alerts_readback.start()

    def _raise_integrity_alert(self, sink: AlertAdapter) -> None:
        """Configuration or firmware differ from the recorded digests: the table stays closed."""
        if self.integrity_problems:
            sink.raise_(
                "config_integrity",
                "critical",
                "configuration or firmware profile differs from the recorded digests; the table stays closed",
                {"problems": self.integrity_problems},
            )

    async def _recover(
        self, journal: Journal, table: TableController, checkpointer: Checkpointer
    ) -> VerifyResult:
        """The chain since the last signed checkpoint first: when it is broken only the verified part becomes
        state (issue 27 §2); then the software document. Returns the start-up check's result."""
        result = await recover_verified(table, journal, self.config, checkpointer)
        publish_software(self.config, journal, self.unjournaled)
        publish_players(journal, table.core)  # who sits where, at every start (issue 41)
        return result

    async def _connect(self) -> None:
        """The shoe's serial link, the broker, then the jackpot sign (after the recovery: the sign's link enters
        the core as an input)."""
        assert self.shoe is not None and self.link is not None and self.jackpot is not None
        await self.shoe.start()
        await self.link.start()
        await self.jackpot.start()

    def _start_loops(self, alerts: AlertManager, sink: AlertAdapter, table: TableController) -> None:
        """The watched tasks: alert escalation, the health loop (watchdog, READY=1, STATUS), the disk watch, the
        shoe watch (a shoe out of reach that no table fault reports: its alert)."""
        assert self.disk is not None
        self._tasks.append(
            asyncio.create_task(escalate_while_journal_writes(alerts, table), name="alerts-escalation")
        )
        owed = functools.partial(retry_owed_journal_writes, table, sink.journal_back)
        self._tasks.append(asyncio.create_task(HealthLoop(self, owed).run(), name="health"))
        self._tasks.append(asyncio.create_task(self.disk.run(), name="journal-disk"))
        self._tasks.append(asyncio.create_task(ShoeWatch(self.shoe, alerts, table).run(), name="shoe-watch"))
        for task in self._tasks:
            task.add_done_callback(_report_death)

    def _start_full_verify(self, journal: Journal, table: TableController) -> None:
        """One-off (not a watched task: it ends when done): the whole chain, in the background; a break the
        start-up check already raised is not raised twice."""
        verify = asyncio.create_task(
            verify_whole_journal(table, journal, self.breaks_raised), name="journal-full-verify"
        )
        verify.add_done_callback(self._whole_check_done)
        self._pending_faults.add(verify)
        verify.add_done_callback(self._pending_faults.discard)

    def _whole_check_done(self, _task: asyncio.Task[None]) -> None:
        if self.commands is not None:
            self.commands.whole_check_pending = False  # clear_integrity taken from now on

    def _log_started(self, table: TableController) -> None:
        problem = table.journal_problem or self.startup_problem
        if (
            problem is not None
        ):  # one line an operator can act on (issue 14 item 3); the table is in the fault
            log.critical("%s: started in the journal_io fault (docs/deploy.md)", problem.text)
        log.info("table %s started (profile %s)", self.config.table.id, self.config.table.profile)

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
        if seq is not None and seq in self.breaks_raised:  # the same break, found again: one fault, not two
            log.critical("journal: the broker's checkpoint shows the break already raised (record %d)", seq)
            return
        if seq is not None:
            self.breaks_raised.add(seq)
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
        """The external links that are down (STATUS says them)."""
        return service_status.link_problems(self.shoe, self.reader, self.link)

    def not_ready(self) -> list[str]:
        """What holds READY=1 back: the journal and the broker (never the shoe: it is said, not waited for)."""
        return service_status.not_ready(self.journal, self.link)

    def shoe_problem(self) -> str:
        """Why the shoe's link is down, in words; "" while it is up (`tablectl status`)."""
        return service_status.shoe_problem(self.shoe)

    def alive(self) -> bool:
        """The service's own parts work (``service_status.alive``): the watchdog is fed only then."""
        return service_status.alive(self.journal, self.table, self.dead_tasks)

    def dead_tasks(self) -> list[str]:
        return service_status.dead_tasks(self._tasks, self.shoe, self.intake)

    def status_text(self) -> str:
        """What ``systemctl status`` shows (sd_notify STATUS=): the faults first, then the links."""
        links = self.link_problems() if self.journal is not None else ["starting"]
        return service_status.status_text(self.table, self.dead_tasks(), links, self.config.table.id)

    # ---- shutdown (shutdown.py) ----
    async def stop(self) -> None:
        """Safe outputs first, then each part on its own (``stop_service``)."""
        await stop_service(self)

    async def run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()


def _report_death(task: asyncio.Task[Any]) -> None:
    """A background task must never end silently (issue 14 item 3: the shoe-event task died unnoticed)."""
    if task.cancelled():
        return
    exc = task.exception()
    log.critical("task %s ended%s", task.get_name(), f": {exc!r}" if exc else "")
