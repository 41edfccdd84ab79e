"""The service's MQTT command handler: alert acknowledgements go to the alert book, everything else to the
table; ``open_table`` is refused while the integrity check fails and is pinned (issue 13 §2: only a profile
named in the integrity manifest whose file still has its recorded digest). Every refusal of the pinning is
answered and journaled with who asked (issue 13)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, NoReturn

from controller.config import TableConfig, opening
from controller.config.integrity import PROFILE_NAME, approved_profiles, recorded_combined, sha256_file
from controller.effects import Rejected
from controller.journal import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.commands import CommandRejected, CommandRequest
from controller.service.disk import DiskWatch
from controller.service.jackpot import JackpotWiring
from controller.shell.controller import TableController
from controller.table.machine_names import TableState

log = logging.getLogger("tablectl.service")

# Supervisor actions handled by the alert book rather than the table state machine.
ALERT_ACTIONS = {"ack_alert"}


class ServiceCommands:
    """``handle`` is the command intake's handler (controller/mqtt/commands.py); ``integrity_problems`` is the
    start-up integrity check's list (empty: open_table may be taken)."""

    def __init__(
        self,
        config: TableConfig,
        journal: Journal,
        table: TableController,
        alerts: AlertManager,
        jackpot: JackpotWiring | None,
        integrity_problems: list[str],
    ) -> None:
        self.config = config
        self.journal = journal
        self.table = table
        self.alerts = alerts
        self.jackpot = jackpot
        self.integrity_problems = integrity_problems
        self.disk: DiskWatch | None = None  # the journal's filesystem (controller/service/disk.py)
        # True until the whole-chain check of this start is done (controller/service/integrity.py): a clear of
        # the integrity fault before then could be undone by the break that check is about to find
        self.whole_check_pending = True

    async def handle(self, req: CommandRequest) -> dict[str, Any]:
        core = self.table.core
        betting = core.state == TableState.BETTING and not core.faults
        refused = self.disk.refusal(req.role, req.action, betting=betting) if self.disk is not None else None
        if refused is not None:
            raise CommandRejected(refused)
        if req.action in ALERT_ACTIONS:
            try:
                alert = self.alerts.acknowledge(int(req.args.get("alert_id", -1)), req.user)
            except (ValueError, KeyError) as exc:
                raise CommandRejected(str(exc)) from None
            return {"alert": alert.to_dict()}
        if req.action == "clear_integrity" and self.whole_check_pending:
            self.refuse(
                req,
                "the whole journal is still being verified since the start: clear the integrity fault once "
                "that check is done (seconds; its result is logged and, when the chain is broken, is the fault)",
            )
        if req.action == "open_table" and self.integrity_problems:
            raise CommandRejected(
                "configuration integrity check failed: " + "; ".join(self.integrity_problems)
            )
        args = dict(req.args)
        if req.action == "open_table":
            args = self.pin_open_table(req, args)
        if req.action == "open_table" and self.jackpot is not None:
            args["jackpot"] = self.jackpot.config_for_open()  # the config, never the caller, sets it
        try:
            return await self.table.handle_command(req.role, req.user, req.action, args, req.request_id)
        except Rejected as exc:
            raise CommandRejected(exc.reason) from None

    def pin_open_table(self, req: CommandRequest, args: dict[str, Any]) -> dict[str, Any]:
        """Issue 13 §2: only a profile NAME listed in the integrity manifest, whose file still has the recorded
        digest; its digest, the configuration's and the profile's text are pinned in the session (journaled
        with open_table): the session's rules come from the journal, never from the file again."""
        name = args.get("profile") or self.config.table.profile
        if not isinstance(name, str) or not PROFILE_NAME.fullmatch(name):
            self.refuse(
                req,
                "open_table takes the name of a rule profile listed in the integrity manifest, never a path",
            )
        try:  # the configuration is the authority: its profile and shoe (controller/config/opening.py)
            args = opening.open_args(self.config, args)
        except opening.OpenRefused as exc:
            self.refuse(req, str(exc))
        manifest = self.config.table.integrity_manifest
        try:
            approved = approved_profiles(manifest)
        except (ValueError, OSError, KeyError, TypeError) as exc:
            self.refuse(req, f"integrity manifest unreadable: {exc}")
        if name not in approved:
            listed = ", ".join(sorted(approved)) or "none"
            self.refuse(req, f"profile {name!r} is not listed in the integrity manifest (listed: {listed})")
        path, recorded = approved[name]
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
            config_sha = sha256_file(Path(self.config.path))
        except (OSError, UnicodeDecodeError) as exc:
            self.refuse(req, f"profile {name}: cannot read {path}: {exc}")
        profile_sha = hashlib.sha256(data).hexdigest()
        if profile_sha != recorded:
            self.refuse(
                req, f"profile {name}: {path} differs from its recorded digest; the table stays closed"
            )
        limits = opening.table_limits(self.config)
        try:  # table.min_bet/max_bet: the core's bet checks and published limits read the pinned text
            text = opening.with_table_limits(text, limits)
        except opening.OpenRefused as exc:
            self.refuse(req, str(exc))
        pinned = {
            "profile": name,
            "profile_sha256": profile_sha,  # the approved file's; the text below carries the table's limits
            "config_sha256": config_sha,
            "combined": recorded_combined(manifest),
            "table_limits": limits,
            "profile_text": text,
            **({"currency": self.config.currency} if self.config.currency else {}),  # events/session names it
        }
        return {**args, "profile": name, "pinned": pinned}  # never the caller's "pinned"

    def refuse(self, req: CommandRequest, reason: str) -> NoReturn:
        """Refused with the reason, and journaled with who (issue 13: every refusal answered and journaled)."""
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
