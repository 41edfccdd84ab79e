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
import hashlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from controller import __version__, sdnotify
from controller.audit import keys
from controller.audit.anchor import BrokerAnchor
from controller.audit.checkpoint import public_key_hex
from controller.audit.checkpointer import Checkpointer
from controller.config import ConfigError, TableConfig, load_config, opening
from controller.config.integrity import (
    PROFILE_NAME,
    approved_profiles,
    combined_digest,
    compute_digests,
    recorded_combined,
    sha256_file,
)
from controller.config.integrity import verify as verify_integrity
from controller.gpio import GpioBoard
from controller.gpio.factory import make_board
from controller.jackpot.table import TableJackpot
from controller.jackpot.wiring import JackpotWiring
from controller.journal import Journal, VerifyResult
from controller.journal.replay import ReplayServer
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, AuthError, CredentialStore, NonceStore
from controller.mqtt.commands import CommandIntake, CommandRejected, CommandRequest
from controller.mqtt.link import LinkConfig, MqttLink
from controller.mqtt.link import TlsConfig as LinkTls
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.topics import (
    ALERT_TYPE,
    ALERTS_EVENTS,
    ALERTS_OPEN,
    ALERTS_OPEN_TYPE,
    SOFTWARE_STATE,
    STATE_TYPE,
    Topics,
)
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.ops.status import StatusWriter, status_dir
from controller.table.controller import TableController
from controller.table.core import TableCore
from controller.table.effects import Rejected
from controller.table.journal_io import JournalProblem, classify, is_write_failure
from controller.table.messages import Publish
from drivers.aio import cancel_tasks
from drivers.card_line import ShoeWithReader
from drivers.events import LockLid
from drivers.serial_port import resolve_port
from drivers.shoe import ShoeDriver
from drivers.usb_reader import PyUsbBackend, UsbCardReader

log = logging.getLogger("tablectl.service")

# Supervisor actions handled by the alert book rather than the table state machine.
ALERT_ACTIONS = {"ack_alert"}


class StartupError(Exception):
    """The service cannot start at all; the message is the one line ``tablectl run`` prints."""


class OptionsError(Exception):
    """Command-line options that do not fit the configuration (exit 2); the message is the whole line."""


class AlertAdapter:
    """The table controller's alert sink, backed by the journaled AlertManager. When the journal cannot be
    written (issue 14 item 3) the alert goes out at once without it (``unjournaled``: marked so, with the id
    it will most likely get) and is raised through the journal once that writes again (``flush``)."""

    def __init__(self, manager: AlertManager, unjournaled: UnjournaledPublisher | None = None) -> None:
        self.manager = manager
        self.unjournaled = unjournaled
        self.owed: list[tuple[str, str, str, dict[str, Any]]] = []  # raised without the journal

    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None:
        rule = str(details.get("rule", "")) if isinstance(details, dict) else ""
        try:
            self.manager.raise_alert(kind, severity, reason, rule=rule, details=details)
        except Exception as exc:
            if not is_write_failure(exc):
                raise
            self._without_journal(kind, severity, reason, rule, details)

    def _without_journal(
        self, kind: str, severity: str, reason: str, rule: str, details: dict[str, Any]
    ) -> None:
        self.owed.append((kind, severity, reason, details))
        log.critical("alert %s [%s] not journaled: %s", kind, severity, reason)
        if self.unjournaled is None:
            return
        book, alert = self.manager.book, None
        for k, sev, why, det in self.owed:  # the open list as it will be once they are journaled
            r = str(det.get("rule", "")) if isinstance(det, dict) else ""
            book, alert = book.raised(k, sev, why, self.manager.clock(), rule=r, details=det)
        assert alert is not None
        self.unjournaled.publish(ALERTS_EVENTS, ALERT_TYPE, {"action": "raised", "alert": alert.to_dict()})
        self.unjournaled.publish(
            ALERTS_OPEN, ALERTS_OPEN_TYPE, {"alerts": [a.to_dict() for a in book.open]}, retain=True
        )

    def flush(self) -> None:
        """The journal writes again: raise the owed alerts through it (journaled, published with ids)."""
        while self.owed:
            kind, severity, reason, details = self.owed[0]
            rule = str(details.get("rule", "")) if isinstance(details, dict) else ""
            self.manager.raise_alert(kind, severity, reason, rule=rule, details=details)
            self.owed.pop(0)


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
        self._ready_sent = False
        self.jackpot: JackpotWiring | None = None
        self.unjournaled: UnjournaledPublisher | None = None
        self.alert_sink: AlertAdapter | None = None
        self.startup_problem: JournalProblem | None = None  # the journal failed a write during start-up
        self._status_sent = ""
        # `tablectl status` reads it (under systemd from /run/tablectl: controller/ops/status.py)
        self.status_writer = StatusWriter(status_dir(Path(config.table.state_dir)), None)
        self._pending_faults: set[asyncio.Task[None]] = set()

    # ---- start-up ----
    async def start(self) -> None:
        cfg = self.config
        self.integrity_problems = self._check_integrity()

        # Outputs to their safe values before anything else can act (PT-2001 r.51, r.60).
        try:
            self.board = make_board(cfg.gpio, loop=asyncio.get_running_loop())  # outputs already safe
        except (RuntimeError, OSError) as exc:  # no GPIO library / no /dev/gpiomem: one line, exit 3
            raise StartupError(f"gpio ({cfg.gpio.backend}): {exc}") from None

        state_dir = Path(cfg.table.state_dir)
        audit_key = self._audit_key(state_dir)
        self.journal = self._open_journal(state_dir, public_key_hex(audit_key.public_key()))
        head_at_open = self.journal.last_seq  # before anything is written (BrokerAnchor)
        self.alerts = AlertManager(self.journal, escalate_after_s=cfg.alerts.escalate_after_s)

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
        self.link = MqttLink(self._link_config(), Topics(cfg.table.site, cfg.table.id, cfg.mqtt.prefix))
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
        try:
            credentials = CredentialStore.load(cfg.supervisors.credentials_file)
        except AuthError as exc:  # unreadable, or the old HMAC format: one line, outputs stay safe (exit 3)
            raise StartupError(f"supervisor credentials: {exc}") from None
        auth = Authenticator(credentials, self._nonce_store())
        self.intake = CommandIntake(
            handler=self._handle_command, auth=auth, alerts=self.alerts, link=self.link
        )
        self.intake.start()

        if self.integrity_problems:
            self.alert_sink.raise_(
                "config_integrity",
                "critical",
                "configuration or firmware profile differs from the recorded digests; the table stays closed",
                {"problems": self.integrity_problems},
            )

        await self.table.start()  # recover from the journal, re-assert safe outputs
        await self._startup_integrity()  # chain, snapshot, the configuration pinned by the open session
        self._publish_software()
        await self.shoe.start()
        await self.link.start()
        await self.jackpot.start()  # after the recovery: the sign's link enters the core as an input
        self._tasks.append(asyncio.create_task(self._escalate(), name="alerts-escalation"))
        self._tasks.append(asyncio.create_task(self._health(), name="health"))
        for task in self._tasks:
            task.add_done_callback(_report_death)
        # One-off (not a watched task: it ends when done): the whole chain, in the background.
        verify = asyncio.create_task(self._verify_whole_journal(), name="journal-full-verify")
        self._pending_faults.add(verify)
        verify.add_done_callback(self._pending_faults.discard)
        problem = self.table.journal_problem or self.startup_problem
        if (
            problem is not None
        ):  # one line an operator can act on (issue 14 item 3); the table is in the fault
            log.critical("%s: started in the journal_io fault (docs/deploy.md)", problem.text)
        log.info("table %s started (profile %s)", cfg.table.id, cfg.table.profile)

    def _audit_key(self, state_dir: Path) -> Any:
        """The table's Ed25519 audit key (created 0600 on first start): it signs the checkpoints."""
        cfg = self.config
        path = cfg.audit.key_file if cfg.audit else keys.default_key_path(state_dir)
        try:
            return keys.load_or_create(path)
        except OSError as exc:  # first start on a full or read-only disk: one line, like the journal's
            if not is_write_failure(exc):
                raise
            where = state_dir if state_dir.exists() else state_dir.parent
            raise StartupError(f"{classify(exc, where).text}: cannot create the audit key {path}") from exc

    def _open_journal(self, state_dir: Path, audit_public_key: str) -> Journal:
        """The journal, or ``StartupError`` with one line naming the cause (disk full, read-only)."""
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            return Journal(
                state_dir / "journal.db", table_id=self.config.table.id, audit_public_key=audit_public_key
            )
        except Exception as exc:
            if not is_write_failure(exc):
                raise
            problem = classify(exc, state_dir if state_dir.exists() else state_dir.parent)
            raise StartupError(f"{problem.text}: cannot open the journal {state_dir / 'journal.db'}") from exc

    def _nonce_store(self) -> NonceStore:
        assert self.journal is not None
        try:
            return NonceStore(self.journal)
        except Exception as exc:  # its table exists already when the disk filled up or went read-only
            if not is_write_failure(exc):
                raise
            self.startup_problem = classify(exc, self.journal.path.parent)
            store = NonceStore.__new__(NonceStore)
            store.journal = self.journal
            store.keep_s = (
                61  # NonceStore's default: commands are refused ("cannot record") until the disk works
            )
            return store

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

        if not PROFILE_NAME.match(name):
            raise ProfileError(f"profile {name[:64]!r}: a profile is named, never a path")
        return load_profile(str(self.config.table.profile_path.parent / f"{name}.toml"))

    def _publish_unjournaled(self, fx: Publish) -> None:
        if self.unjournaled is not None:
            self.unjournaled.publish(fx.topic, fx.event_type, fx.text or fx.data, retain=fx.retain)

    # ---- integrity at start-up (issue 13 §1-2): a fault, never a crash, never a silent start ----
    async def _startup_integrity(self) -> None:
        assert self.table is not None and self.journal is not None
        try:
            result = verify_journal(self.journal)
        except Exception as exc:  # JournalIntegrityError(seq, reason), or an unreadable journal
            seq = getattr(exc, "seq", None)
            result = VerifyResult(False, 0, seq, str(getattr(exc, "reason", "") or exc))
        if not result.ok:
            where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
            await self._integrity_fault(
                f"journal chain broken at {where}: {result.reason}",
                {"record": result.first_bad_seq, "check": "journal_chain"},
            )
        for problem in self.table.recovery_problems:
            await self._integrity_fault(problem, {"check": "snapshot"})
        for bad in self.journal.integrity_problems:  # snapshots not restored: their digest is not chained
            await self._integrity_fault(bad.reason, {"record": bad.seq, "check": "snapshot_chain"})
        problems = self._pinned_problems()
        if problems:
            await self._integrity_fault(
                "the configuration differs from the one pinned when the open session began",
                {"check": "pinned_configuration", "problems": problems},
            )

    def _pinned_problems(self) -> list[str]:
        """The open session's pinned digests against the files now (issue 13 §2: every load checks them)."""
        assert self.table is not None
        core = self.table.core
        pinned = core.session.pinned
        if not core.session.id or core.state in ("closed", "deck_check_failed"):
            return []
        if not isinstance(pinned, dict):
            return []  # a session opened before pinning existed: nothing recorded to compare
        problems = []
        name = str(pinned.get("profile"))
        if not PROFILE_NAME.match(name):
            return [f"the session's pinned profile name {name[:64]!r} is not a profile name"]
        files = {
            "profile": (self.config.table.profile_path.parent / f"{name}.toml", pinned.get("profile_sha256")),
            "config": (Path(self.config.path), pinned.get("config_sha256")),
        }
        for role, (path, want) in files.items():
            try:
                now = sha256_file(path)
            except OSError as exc:
                problems.append(f"{role}: cannot read {path}: {exc.strerror or exc}")
                continue
            if now != want:
                problems.append(
                    f"{role}: {path} differs from the digest pinned by session {core.session.id} "
                    f"(pinned {str(want)[:16]}..., now {now[:16]}...)"
                )
        return problems

    async def _verify_whole_journal(self) -> None:
        """After start-up, the whole chain on a connection of its own (a thread): the start-up check covers only
        the records since the last signed checkpoint, so an old record edited while the service was stopped is
        found here, seconds later, and is the same ``integrity`` fault (issue 13 §1)."""
        assert self.journal is not None
        try:
            result = await asyncio.to_thread(
                Journal.verify_file, self.journal.path, self.journal.audit_public_key
            )
        except Exception as exc:  # an unreadable file is a failed check, not a crash
            result = VerifyResult(False, 0, None, f"cannot read the journal: {exc}")
        if not result.ok:
            where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
            await self._integrity_fault(
                f"journal chain broken at {where}: {result.reason}",
                {"record": result.first_bad_seq, "check": "journal_chain_full"},
            )
        else:
            log.info("journal: the whole chain verified (%d records)", result.records)

    async def _integrity_fault(self, reason: str, details: dict[str, Any]) -> None:
        assert self.table is not None
        log.critical("integrity fault: %s %s", reason, details)
        try:
            await self.table.submit({"type": "integrity_fault", "reason": reason, "details": details})
        except Rejected as exc:  # the journal cannot take it: the journal_io fault is raised instead
            log.critical("integrity fault not journaled: %s", exc.reason)

    def software_document(self) -> dict[str, Any]:
        """Contract 8: ``state/software``: version, profile and book, the digests in force, the audit key."""
        cfg = self.config
        try:
            digests = compute_digests(cfg.path)
        except ConfigError as exc:  # a file gone unreadable: shown as such by the integrity check
            log.error("state/software: %s", exc)
            digests = {}
        return {
            "version": __version__,
            "profile": cfg.table.profile,
            "rule_book": _rule_book(cfg.table.profile_path),
            "digests": digests,
            "combined": combined_digest(digests),
            "audit_public_key": audit_public_key(cfg),
        }

    def _publish_software(self) -> None:
        assert self.journal is not None
        data = self.software_document()
        try:
            with self.journal.transaction() as tx:
                tx.publish(SOFTWARE_STATE, STATE_TYPE, data, retain=True)
        except Exception as exc:
            if not is_write_failure(exc) or self.unjournaled is None:
                raise
            self.unjournaled.publish(SOFTWARE_STATE, STATE_TYPE, data, retain=True)

    def _anchor_mismatch(self, seq: int | None, reason: str) -> None:
        """The broker's retained checkpoint contradicts the journal (cut short while stopped): the fault."""
        task = asyncio.get_running_loop().create_task(
            self._integrity_fault(reason, {"record": seq, "check": "broker_checkpoint"})
        )
        self._pending_faults.add(task)
        task.add_done_callback(self._pending_faults.discard)

    def _publish_refused(self, topic: str, event_id: int, reason: str) -> None:
        if self.alerts is not None:
            self.alerts.raise_alert(
                "journal_integrity", "critical", reason, details={"topic": topic, "event_id": event_id}
            )

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
        password = m.password() or ""  # only from [mqtt] password_file: never on a command line
        tls = LinkTls(ca=m.tls.ca, cert=m.tls.cert, key=m.tls.key) if m.tls else None
        return LinkConfig(
            host=m.host,
            port=m.port,
            username=m.username or "",
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
        if req.action == "open_table":
            args = self._pin_open_table(req, args)
        if req.action == "open_table" and self.jackpot is not None:
            args["jackpot"] = self.jackpot.config_for_open()  # the config, never the caller, sets it
        try:
            return await self.table.handle_command(req.role, req.user, req.action, args, req.request_id)
        except Rejected as exc:
            raise CommandRejected(exc.reason) from None

    def _pin_open_table(self, req: CommandRequest, args: dict[str, Any]) -> dict[str, Any]:
        """Issue 13 §2: only a profile NAME listed in the integrity manifest, whose file still has the recorded
        digest; its digest, the configuration's and the profile's text are pinned in the session (journaled
        with open_table): the session's rules come from the journal, never from the file again."""
        name = args.get("profile") or self.config.table.profile
        if not isinstance(name, str) or not PROFILE_NAME.match(name):
            self._refuse(
                req,
                "open_table takes the name of a rule profile listed in the integrity manifest, never a path",
            )
        try:  # the configuration is the authority: its profile and shoe (controller/config/opening.py)
            args = opening.open_args(self.config, args)
        except opening.OpenRefused as exc:
            self._refuse(req, str(exc))
        manifest = self.config.table.integrity_manifest
        try:
            approved = approved_profiles(manifest)
        except (ValueError, OSError, KeyError, TypeError) as exc:
            self._refuse(req, f"integrity manifest unreadable: {exc}")
        if name not in approved:
            listed = ", ".join(sorted(approved)) or "none"
            self._refuse(req, f"profile {name!r} is not listed in the integrity manifest (listed: {listed})")
        path, recorded = approved[name]
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
            config_sha = sha256_file(Path(self.config.path))
        except (OSError, UnicodeDecodeError) as exc:
            self._refuse(req, f"profile {name}: cannot read {path}: {exc}")
        profile_sha = hashlib.sha256(data).hexdigest()
        if profile_sha != recorded:
            self._refuse(
                req, f"profile {name}: {path} differs from its recorded digest; the table stays closed"
            )
        limits = opening.table_limits(self.config)
        try:  # table.min_bet/max_bet: the core's bet checks and published limits read the pinned text
            text = opening.with_table_limits(text, limits)
        except opening.OpenRefused as exc:
            self._refuse(req, str(exc))
        pinned = {
            "profile": name,
            "profile_sha256": profile_sha,  # the approved file's; the text below carries the table's limits
            "config_sha256": config_sha,
            "combined": recorded_combined(manifest),
            "table_limits": limits,
            "profile_text": text,
        }
        return {**args, "profile": name, "pinned": pinned}  # never the caller's "pinned"

    def _refuse(self, req: CommandRequest, reason: str) -> NoReturn:
        """Refused with the reason, and journaled with who (issue 13: every refusal answered and journaled)."""
        assert self.journal is not None
        shown = req.args.get("profile")
        record = {
            "user": req.user,
            "role": req.role,
            "action": req.action,
            "request_id": req.request_id,
            "profile": shown[:200] if isinstance(shown, str) else repr(shown)[:200],
            "reason": reason,
        }
        try:
            with self.journal.transaction() as tx:
                tx.append("command_refused", record)
        except Exception as exc:
            log.error("refusal not journaled (%s): %s", exc, record)
        log.warning("refused %s from %s: %s", req.action, req.user, reason)
        raise CommandRejected(reason)

    # ---- health, readiness, watchdog ----
    def link_problems(self) -> list[str]:
        """What keeps the table from being ready: the external links that are down."""
        problems = []
        shoe = getattr(self.shoe, "shoe", self.shoe)  # the shoe itself when a separate reader deals
        if not (shoe and shoe.connected):
            problems.append("shoe link down")
        if self.reader is not None and not self.reader.connected:
            problems.append("card reader down")
        if not (self.link and self.link.connected):
            problems.append("broker unreachable")
        return problems

    def alive(self) -> bool:
        """The service's own parts work: the journal answers and every task runs. External links (shoe,
        broker) do not count: restarting cannot mend them, so an outage degrades STATUS but keeps the watchdog
        fed. Nor does a journal that cannot be written (disk full, read-only): a restart cannot mend it either,
        and the running service keeps the table safe in the journal_io fault and answers commands. A hung
        event loop or a dead task stops the pings and systemd restarts the service."""
        if self.journal is None or self.table is None:
            return False
        try:
            self.journal.last_seq_on_disk()
        except Exception:
            return False
        return self.table.running() and not self.dead_tasks()

    def dead_tasks(self) -> list[str]:
        out = [t.get_name() for t in self._tasks if t.done()]
        part_tasks = getattr(
            self.shoe, "dead_tasks", None
        )  # the card line's forwarding (drivers/card_line.py)
        if callable(part_tasks):
            out.extend(part_tasks())
        if self.intake is not None and self.intake._worker is not None and self.intake._worker.done():
            out.append(self.intake._worker.get_name())
        return out

    def status_text(self) -> str:
        """What ``systemctl status`` shows (sd_notify STATUS=): the faults first, then the links."""
        parts: list[str] = []
        table = self.table
        if table is not None and table.journal_problem is not None:
            parts.append(
                f"FAULT journal_io: {table.journal_problem.text}: dealing refused, lid locked; "
                "free space or remount, then a supervisor's clear_journal_io"
            )
        faults = table.core.faults if table is not None else {}
        if table is not None and table.journal_problem is None and "journal_io" in faults:
            parts.append(
                "FAULT journal_io: the journal writes again; awaiting a supervisor's clear_journal_io"
            )
        if "integrity" in faults:
            parts.append(f"FAULT integrity: {faults['integrity'].reason}")
        dead = self.dead_tasks()
        if dead:
            parts.append("task died: " + ", ".join(dead))
        links = self.link_problems() if self.journal is not None else ["starting"]
        if links:
            parts.append("degraded: " + ", ".join(links))
        return "; ".join(parts) or f"table {self.config.table.id}: shoe, journal and broker up"

    async def _escalate(self, every_s: float = 1.0) -> None:
        """The alert book's escalation, paused while the journal cannot be written (nothing to record it in;
        the journal_io alert itself is critical already)."""
        assert self.alerts is not None and self.table is not None
        while True:
            await asyncio.sleep(every_s)
            if self.table.journal_problem is not None:
                continue
            try:
                self.alerts.escalate_due()
            except Exception as exc:
                log.error("alerts: escalation pass failed: %s", exc)

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

    async def _health(self) -> None:
        interval = sdnotify.watchdog_interval()
        period = min(interval / 2, 1.0) if interval else 1.0
        while True:
            if self.alive():
                sdnotify.watchdog()
            await self._journal_back()
            text = self.status_text()
            if not self.link_problems() and not self._ready_sent:
                sdnotify.ready(text)  # the service is up (in a fault or not: STATUS says which)
                self._ready_sent, self._status_sent = True, text
            elif text != self._status_sent:
                sdnotify.status(text)
                self._status_sent = text
            try:
                self.status_writer.tick(self)
            except Exception as exc:  # a full disk must not stop the watchdog pings
                log.debug("status file not written: %s", exc)
            # Until READY, look often: systemd (and a restart after kill -9) waits on it.
            await asyncio.sleep(period if self._ready_sent else 0.05)

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


def audit_public_key(config: TableConfig) -> str | None:
    """The table's audit checkpoint public key, hex (docs/security.md), or None before the key exists."""
    path = config.audit.key_file if config.audit else keys.default_key_path(Path(config.table.state_dir))
    try:
        return keys.public_key_hex_of(path)
    except Exception as exc:  # an unusable key file: the checkpoints say so; the document shows none
        log.error("state/software: audit key %s: %s", path, exc)
        return None


def _rule_book(profile_path: Path) -> str | None:
    """The profile's ``book`` (e.g. "PT-2001"), read without trusting the file to parse."""
    from controller.rules.profiles import ProfileError, profile_toml

    try:
        book = profile_toml(profile_path.read_text(encoding="utf-8"), source=profile_path.name).get("book")
    except (OSError, UnicodeDecodeError, ProfileError):
        return None
    return book[:64] if isinstance(book, str) else None


def verify_journal(journal: Journal) -> VerifyResult:
    """The journal's start-up verification, behind one function: the journal helper's incremental
    ``Journal.verify_since_checkpoint()`` (same ``VerifyResult``; or ``JournalIntegrityError(seq, reason)``,
    handled by the caller): from the last signed checkpoint, so start-up does not grow with the journal
    (issue 13 §1, the integrity fault)."""
    return journal.verify_since_checkpoint()


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


# ---- CLI ----
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Everything comes from the configuration file (hashed and pinned by the session: docs/security.md); the
    command line has no override of it."""
    parser.add_argument("--config", required=True, help="table configuration (TOML)")
    parser.add_argument(
        "--metrics-file",
        help="also write the status as a Prometheus textfile (node_exporter textfile collector, *.prom)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")


def main(args: argparse.Namespace, build: Callable[[TableConfig], TableService] = TableService) -> int:
    """`tablectl run`; ``build`` makes the service from the loaded configuration (the bench's launcher adds its
    control socket: tablebench/service.py). Errors are one line on stderr: 2 a bad configuration (or options
    that do not fit it: ``build`` raises OptionsError), 3 the service cannot start (docs/cli.md)."""
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("transitions").setLevel(logging.WARNING)  # the library's per-state chatter: not at INFO
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"tablectl run: bad configuration: {exc}", file=sys.stderr)
        return 2
    try:
        service = build(config)
        service.status_writer.metrics_file = Path(args.metrics_file) if args.metrics_file else None
        asyncio.run(service.run_forever())
    except OptionsError as exc:
        print(exc, file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"tablectl run: {exc}", file=sys.stderr, flush=True)
        return 3
    return 0
