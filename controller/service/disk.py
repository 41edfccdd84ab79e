"""The journal's filesystem watched while the service runs (issue 27 §6; controller/ops/disk.py): a warning
alert below the first threshold, below the second a critical alert and no new round (``place_bet`` and
``no_more_bets`` refused with the reason: the round in progress always finishes), both journaled while the journal
can still write. Measured every ``EVERY_S`` seconds; the numbers go to the status document and the metrics.

Once space is back the alerts whose cause is gone close themselves (acknowledged by ``tablectl``, journaled and
published like any acknowledgement): a critical one when the filesystem is above the refusal threshold again, a
warning when it is above the warning threshold. The one rule for every alert is in docs/mqtt.md "Alerts": what
measures a condition clears itself when the condition is gone; a safety fault waits for an authorised person."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from controller.config.model import JournalConfig
from controller.mqtt.alerts import AlertManager
from controller.ops.disk import DiskLevel, DiskLimits, DiskSpace, describe, level, measure
from controller.service.alerts import UNJOURNALED_ACK as SELF_CLEARED

log = logging.getLogger("tablectl.service")

EVERY_S = 5.0
ALERT_KIND = "disk_space"  # controller/alert_kinds.py
NEW_ROUND_ACTIONS = frozenset({"place_bet", "no_more_bets"})  # a round starts with them (not its play)
SEVERITY = {DiskLevel.WARN: "warning", DiskLevel.REFUSE: "critical"}
RANK = {DiskLevel.OK: 0, DiskLevel.WARN: 1, DiskLevel.REFUSE: 2}  # the alert's key is the level's value


def limits_of(cfg: JournalConfig) -> DiskLimits:
    return DiskLimits(
        cfg.disk_warn_free_mb, cfg.disk_refuse_free_mb, cfg.disk_warn_free_inodes, cfg.disk_refuse_free_inodes
    )


class DiskWatch:
    def __init__(self, directory: Path, cfg: JournalConfig, alerts: AlertManager) -> None:
        self.directory = directory
        self.limits = limits_of(cfg)
        self.alerts = alerts
        self.space: DiskSpace | None = None
        self.level = DiskLevel.OK

    def check(self) -> DiskLevel:
        try:
            self.space = measure(self.directory)
        except OSError as exc:
            log.error("journal disk space not measured: %s", exc)
            return self.level
        now = level(self.space, self.limits)
        if now != self.level:
            self.level = now
            if now is DiskLevel.OK:
                log.warning("journal disk: %s again", describe(self.space))
            else:
                self._alert(now)
        self._clear_gone(now)
        return now

    def _clear_gone(self, now: DiskLevel) -> None:
        """Close the open disk_space alerts worse than the level measured now (also those a previous run left
        open: the alert book is rebuilt from the journal at start)."""
        space = describe(self.space) if self.space is not None else "measured"
        for alert in self.alerts.open_alerts:
            if alert.kind != ALERT_KIND:
                continue
            key = str((alert.details or {}).get("key", DiskLevel.REFUSE.value))
            was = next((lv for lv in DiskLevel if lv.value == key), DiskLevel.REFUSE)
            if RANK[was] <= RANK[now]:
                continue
            try:
                self.alerts.acknowledge(alert.alert_id, SELF_CLEARED)
            except Exception as exc:  # the journal cannot write yet: the next measurement tries again
                log.error("disk_space alert %s not closed: %s", alert.alert_id, exc)
                return
            log.warning("journal disk: %s; alert %s closed (its cause is gone)", space, alert.alert_id)

    def _alert(self, now: DiskLevel) -> None:
        assert self.space is not None
        what = (
            "no new round until space is freed (the round in progress finishes)"
            if now is DiskLevel.REFUSE
            else "free space before it runs out"
        )
        reason = f"journal disk low: {describe(self.space)}; {what}"
        log.critical(reason) if now is DiskLevel.REFUSE else log.warning(reason)
        try:
            self.alerts.raise_or_repeat(
                ALERT_KIND,
                SEVERITY[now],
                reason,
                key=now.value,
                details={"free_bytes": self.space.free_bytes, "free_inodes": self.space.free_inodes},
            )
        except Exception as exc:  # the disk may be full already: the journal_io fault's own path
            log.error("disk_space alert not journaled: %s", exc)

    def refusal(self, role: str, action: str, *, betting: bool) -> str | None:
        """Why a dealer input that starts a round is refused now (``betting``: the table takes bets, no fault
        holds it; otherwise the table's own refusal says why); None: it is not."""
        if self.level is not DiskLevel.REFUSE or role != "dealer" or action not in NEW_ROUND_ACTIONS:
            return None
        if not betting:
            return None
        if self.check() is not DiskLevel.REFUSE:  # measured again: space freed since the last look
            return None
        space = describe(self.space) if self.space else "unknown"
        return (
            f"journal disk low ({space}, below [journal] disk_refuse_free_mb / disk_refuse_free_inodes): "
            "no new round until space is freed"
        )

    async def run(self) -> None:
        while True:
            self.check()
            await asyncio.sleep(EVERY_S)
