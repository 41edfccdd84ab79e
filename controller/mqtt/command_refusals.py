"""What the command intake does with a refusal: count it, journal it (a ``command_refused`` record, or one
``command_dropped`` record per source per flush for messages dropped unparsed), raise or repeat its alert
(``command_rejected``, ``command_flood``, ``command_lockout``, capped at ``REJECTION_ALERT_CAP`` distinct open
alerts per kind), feed the failed-signature lockout, and answer ``CommandRejected`` (controller/mqtt/commands.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, NoReturn

from controller.actions import SIGNED_ROLES
from controller.journal.store import Transaction
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import REFUSED_RECORD, Authenticator, AuthError
from controller.mqtt.command_log import intake_log as log
from controller.mqtt.command_log import journal_failure
from controller.mqtt.command_payload import journal_text, request_id_of
from controller.mqtt.command_request import CommandRejected, IntakeCounters

REJECTION_ALERT_CAP = 20  # distinct open command_rejected alerts; beyond it refusals aggregate into one
DROPPED_RECORD = "command_dropped"
LOCKOUT_TEXT = "too many failed signatures: refused for 15 minutes (issue 13)"


class RefusalLog:
    """Refusals and drops of one intake: journaled, alerted, counted in ``counters``."""

    def __init__(
        self,
        *,
        auth: Authenticator,
        alerts: AlertManager,
        counters: IntakeCounters,
        clock: Callable[[], float],
    ) -> None:
        self.auth = auth
        self.alerts = alerts
        self.journal = alerts.journal
        self.counters = counters
        self.clock = clock
        self._drops: dict[tuple[str, str], list[Any]] = {}  # (role, account) -> [count, first, last, reasons]
        self._flush_handle: asyncio.TimerHandle | None = None

    def refuse(
        self,
        role: str,
        doc: Any,
        account: str,
        code: str,
        detail: str,
        public: str,
        *,
        auth: AuthError | None = None,
    ) -> NoReturn:
        """Count, log, journal and alert one refused command, then raise ``CommandRejected(public)``."""
        self.counters.count_reject(code)
        # it may quote the payload: lone surrogates escaped before the journal
        detail = journal_text(detail, 300)
        user = journal_text(doc.get("user"), 32) if isinstance(doc, dict) else ""
        log.warning(
            "commands: refused %s command (user %r, account %s): %s", role, user, account, detail[:200]
        )
        now = self.clock()
        failure = bool(auth and auth.signature_failure)
        keys = self.auth.lockout_keys(user or None, role, account) if failure else []
        record = {
            "role": journal_text(role, 16), "user": user, "account": account, "code": code,
            "reason": journal_text(detail, 300), "request_id": request_id_of(doc) or "",
            "action": journal_text(doc.get("action") if isinstance(doc, dict) else None, 32),
            "signature_failure": failure, "lockout_keys": keys,
        }  # fmt: skip
        try:
            with self.journal.transaction() as tx:
                tx.append(REFUSED_RECORD, record)
                if role in SIGNED_ROLES:
                    self._alert_refusal(tx, role, user, account, detail)
                locks = self.auth.failed(user or None, role, account, now) if failure else []
                if code == "locked":
                    keys = self.auth.lockout_keys(user or None, role, account)
                    locks = [next((k for k in keys if k in detail), detail)]
                for key in locks:
                    self._aggregate(
                        tx, "command_lockout", "critical", f"{key}: {LOCKOUT_TEXT}", key,
                        {"role": role, "account": account},
                    )  # fmt: skip
        except Exception as exc:  # the answer still goes out; the failure is logged
            if not journal_failure(exc, "a refusal"):
                log.exception("commands: could not journal a refusal")
        raise CommandRejected(public)

    def _alert_refusal(self, tx: Transaction, role: str, user: str, account: str, detail: str) -> None:
        self._aggregate(
            tx, "command_rejected", "warning", detail[:300], f"{role}:{user or '-'}:{account}",
            {"role": role, "user": user, "account": account},
        )  # fmt: skip

    def _aggregate(
        self, tx: Transaction, kind: str, severity: str, reason: str, key: str, details: dict[str, Any]
    ) -> None:
        """Raise ``kind`` for ``key`` or count one more in its open alert; beyond ``REJECTION_ALERT_CAP``
        distinct open alerts of the kind, count in one overflow alert (key "*"): invented user or account
        names can neither silence the alerts nor grow the retained alerts/open document without bound."""
        book = self.alerts._current(tx)
        if book.find(kind, key) is None and book.count(kind) >= REJECTION_ALERT_CAP:
            key = "*"
        self.alerts.raise_or_repeat(kind, severity, reason, key=key, details=details, tx=tx)

    def drop(self, role: str, account: str, why: str) -> None:
        """A message dropped before it was parsed: counted now, journaled with its source's others."""
        self.counters.received += 1
        self.counters.dropped += 1
        self.counters.count_reject("dropped")
        now = self.clock()
        entry = self._drops.setdefault((role, account), [0, now, now, {}])
        entry[0] += 1
        entry[2] = now
        entry[3][why] = entry[3].get(why, 0) + 1
        if self._flush_handle is None:
            with contextlib.suppress(RuntimeError):
                self._flush_handle = asyncio.get_running_loop().call_later(1.0, self.flush_drops)

    def flush_drops(self) -> None:
        """Journal the drops since the last flush: one record per source, one aggregated alert."""
        self._flush_handle = None
        drops, self._drops = self._drops, {}
        if not drops:
            return
        try:
            with self.journal.transaction() as tx:
                for (role, account), (count, first, last, why) in drops.items():
                    tx.append(
                        DROPPED_RECORD,
                        {"role": role, "account": account, "count": count, "first": first, "last": last,
                         "reasons": why},
                    )  # fmt: skip
                    self._aggregate(
                        tx, "command_flood", "warning",
                        f"{count} commands on cmd/{role} from {account} dropped ({', '.join(sorted(why))})",
                        f"{role}:{account}", {"role": role, "account": account},
                    )  # fmt: skip
        except Exception as exc:
            if not journal_failure(exc, f"{len(drops)} dropped-command counts"):
                log.exception("commands: could not journal %d dropped-command counts", len(drops))
