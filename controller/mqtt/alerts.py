"""Floor alerts: raised, escalated while unacknowledged, acknowledged by a supervisor (recorded with who).

Pure core (``AlertBook``: immutable-style updates, ``to_dict``/``from_dict``, rebuilt from journal records)
plus a thin I/O shell (``AlertManager``) that journals and publishes every change in ONE transaction: a record
``alert`` with the action and the alert, an ``alerts/events`` event, and the retained ``alerts/open`` document
(so a console that connects later sees every open alert). Jams and damaged cards need a chief inspector
(PT-2001 r.51), hence acknowledgement only by a supervisor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

from controller.alert_kinds import ALERT_KINDS
from controller.config.keys import int_default
from controller.journal.store import Journal, Record, Transaction
from controller.topics import ALERT_TYPE, ALERTS_EVENTS, ALERTS_OPEN, ALERTS_OPEN_TYPE

KINDS = tuple(ALERT_KINDS)
SEVERITIES = ("info", "warning", "critical")
RECORD_KIND = "alert"
log = logging.getLogger(__name__)


class AlertError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Alert:
    alert_id: int
    kind: str
    severity: str
    reason: str
    raised_at: float
    rule: str = ""
    details: dict[str, Any] | None = None
    level: int = 0  # escalation level: 0 = as raised
    escalated_at: float | None = None
    acked_by: str | None = None
    acked_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["details"] = dict(self.details or {})
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Alert:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True, slots=True)
class AlertBook:
    """Open alerts and the next id. Every method returns a new book plus what changed."""

    open: tuple[Alert, ...] = ()
    next_id: int = 1

    def raised(
        self,
        kind: str,
        severity: str,
        reason: str,
        now: float,
        *,
        rule: str = "",
        details: dict[str, Any] | None = None,
    ) -> tuple[AlertBook, Alert]:
        if kind not in KINDS:
            raise AlertError(f"alert kind {kind!r}: expected one of {', '.join(KINDS)}")
        if severity not in SEVERITIES:
            raise AlertError(f"alert severity {severity!r}: expected one of {', '.join(SEVERITIES)}")
        alert = Alert(self.next_id, kind, severity, reason, now, rule, dict(details or {}))
        return AlertBook((*self.open, alert), self.next_id + 1), alert

    def acknowledged(self, alert_id: int, user: str, now: float) -> tuple[AlertBook, Alert]:
        if not user:
            raise AlertError("acknowledgement needs the supervisor's user name")
        found = self.get(alert_id)
        if found is None:
            raise AlertError(f"alert {alert_id} is not open (unknown or already acknowledged)")
        acked = replace(found, acked_by=user, acked_at=now)
        return AlertBook(tuple(a for a in self.open if a.alert_id != alert_id), self.next_id), acked

    def due(self, now: float, after_s: float) -> list[Alert]:
        """Open alerts unacknowledged for another ``after_s`` since raised or last escalated."""
        return [a for a in self.open if now - (a.escalated_at or a.raised_at) >= after_s]

    def escalated(self, alert_id: int, now: float) -> tuple[AlertBook, Alert]:
        a = self.get(alert_id)
        if a is None:
            raise AlertError(f"alert {alert_id} is not open")
        up = replace(a, level=a.level + 1, escalated_at=now, severity="critical")
        return AlertBook(tuple(up if x.alert_id == alert_id else x for x in self.open), self.next_id), up

    def repeated(self, alert_id: int, reason: str, details: dict[str, Any]) -> tuple[AlertBook, Alert]:
        """The same alert again (``details["count"]`` counts the occurrences): one open alert, not many."""
        a = self.get(alert_id)
        if a is None:
            raise AlertError(f"alert {alert_id} is not open")
        up = replace(a, reason=reason, details=dict(details))
        return AlertBook(tuple(up if x.alert_id == alert_id else x for x in self.open), self.next_id), up

    def find(self, kind: str, key: str) -> Alert | None:
        """The open alert of ``kind`` whose ``details["key"]`` is ``key``."""
        return next((a for a in self.open if a.kind == kind and (a.details or {}).get("key") == key), None)

    def get(self, alert_id: int) -> Alert | None:
        return next((a for a in self.open if a.alert_id == alert_id), None)

    def count(self, kind: str) -> int:
        return sum(1 for a in self.open if a.kind == kind)

    # ---- persistence ----
    def to_dict(self) -> dict[str, Any]:
        return {"open": [a.to_dict() for a in self.open], "next_id": self.next_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AlertBook:
        return cls(tuple(Alert.from_dict(a) for a in d.get("open", [])), int(d.get("next_id", 1)))

    def apply(self, action: str, alert: Alert) -> AlertBook:
        """Replay one journaled change (``alert`` record)."""
        others = tuple(a for a in self.open if a.alert_id != alert.alert_id)
        next_id = max(self.next_id, alert.alert_id + 1)
        if action == "acknowledged":
            return AlertBook(others, next_id)
        if action == "raised":
            return AlertBook((*others, alert), next_id)
        return AlertBook(tuple(alert if a.alert_id == alert.alert_id else a for a in self.open), next_id)

    @classmethod
    def from_records(cls, records: Iterable[Record], start: AlertBook | None = None) -> AlertBook:
        book = start or cls()
        for rec in records:
            if rec.kind != RECORD_KIND:
                continue
            try:
                book = book.apply(rec.data["action"], Alert.from_dict(rec.data["alert"]))
            except (KeyError, TypeError, ValueError) as exc:  # never let one bad record stop a restart
                log.error("journal record %d is not an alert record (%s): skipped", rec.seq, exc)
        return book


class AlertManager:
    """Journals + publishes alert changes; pass the caller's ``tx`` to raise atomically with its change."""

    def __init__(
        self,
        journal: Journal,
        *,
        escalate_after_s: float = int_default("alerts", "escalate_after_s"),  # the table's [alerts]
        clock: Callable[[], float] = time.time,
        book: AlertBook | None = None,
    ) -> None:
        self.journal = journal
        self.escalate_after_s = escalate_after_s
        self.clock = clock
        self.book = (
            book if book is not None else AlertBook.from_records(journal.records(kinds=(RECORD_KIND,)))
        )
        self._pending: dict[int, tuple[Transaction, AlertBook]] = {}  # changes waiting for their tx's COMMIT
        journal.add_commit_listener(self._on_commit)

    def _on_commit(self, tx: Transaction) -> None:
        pending = self._pending.pop(id(tx), None)
        if pending is not None and pending[0] is tx:
            self.book = pending[1]

    def _current(self, tx: Transaction) -> AlertBook:
        pending = self._pending.get(id(tx))
        return pending[1] if pending is not None and pending[0] is tx else self.book

    def _record(self, tx: Transaction, book: AlertBook, action: str, alert: Alert) -> None:
        tx.append(RECORD_KIND, {"action": action, "alert": alert.to_dict()})
        tx.publish(ALERTS_EVENTS, ALERT_TYPE, {"action": action, "alert": alert.to_dict()})
        tx.publish(ALERTS_OPEN, ALERTS_OPEN_TYPE, {"alerts": [a.to_dict() for a in book.open]}, retain=True)
        self._pending[id(tx)] = (tx, book)

    def _in_tx(self, tx: Transaction | None, fn: Callable[[Transaction], Alert]) -> Alert:
        if tx is not None:
            return fn(tx)
        with self.journal.transaction() as own:
            return fn(own)

    # ---- API ----
    def raise_alert(
        self,
        kind: str,
        severity: str,
        reason: str,
        *,
        rule: str = "",
        details: dict[str, Any] | None = None,
        tx: Transaction | None = None,
    ) -> Alert:
        def go(t: Transaction) -> Alert:
            book, alert = self._current(t).raised(
                kind, severity, reason, self.clock(), rule=rule, details=details
            )
            self._record(t, book, "raised", alert)
            return alert

        return self._in_tx(tx, go)

    def raise_or_repeat(
        self,
        kind: str,
        severity: str,
        reason: str,
        *,
        key: str,
        details: dict[str, Any] | None = None,
        tx: Transaction | None = None,
    ) -> Alert:
        """Raise an alert, or, if one of ``kind`` with the same ``key`` is open, count one more occurrence in
        it (action ``repeated``, ``details["count"]``): a flood aggregates instead of burying the floor."""

        def go(t: Transaction) -> Alert:
            book = self._current(t)
            found = book.find(kind, key)
            if found is None:
                book, alert = book.raised(
                    kind, severity, reason, self.clock(), details={**(details or {}), "key": key, "count": 1}
                )
                self._record(t, book, "raised", alert)
                return alert
            count = int((found.details or {}).get("count", 1)) + 1
            book, alert = book.repeated(
                found.alert_id,
                reason,
                {**(found.details or {}), **(details or {}), "key": key, "count": count},
            )
            self._record(t, book, "repeated", alert)
            return alert

        return self._in_tx(tx, go)

    def acknowledge(self, alert_id: int, user: str, *, tx: Transaction | None = None) -> Alert:
        """A supervisor acknowledged the alert; raises ``AlertError`` if it is not open."""

        def go(t: Transaction) -> Alert:
            book, alert = self._current(t).acknowledged(alert_id, user, self.clock())
            self._record(t, book, "acknowledged", alert)
            return alert

        return self._in_tx(tx, go)

    def escalate_due(self) -> list[Alert]:
        """Escalate every alert unacknowledged for ``escalate_after_s`` (journaled and published)."""
        out = []
        for alert in self.book.due(self.clock(), self.escalate_after_s):

            def go(t: Transaction, a: Alert = alert) -> Alert:
                book, up = self._current(t).escalated(a.alert_id, self.clock())
                self._record(t, book, "escalated", up)
                return up

            out.append(self._in_tx(None, go))
        return out

    def publish_open(self) -> None:
        """Republish the open list (e.g. at start-up, so the retained document matches the rebuilt book)."""
        with self.journal.transaction() as tx:
            tx.publish(
                ALERTS_OPEN, ALERTS_OPEN_TYPE, {"alerts": [a.to_dict() for a in self.book.open]}, retain=True
            )

    @property
    def open_alerts(self) -> tuple[Alert, ...]:
        return self.book.open

    async def run(self, check_every_s: float = 1.0) -> None:
        """Background escalation loop."""
        while True:
            await asyncio.sleep(check_every_s)
            try:
                self.escalate_due()
            except Exception:  # a journal hiccup must not end escalation for good
                log.exception("alerts: escalation pass failed")
