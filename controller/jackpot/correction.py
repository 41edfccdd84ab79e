"""The jackpot meter's corrections under dual control (PT-2001 r.44): one supervisor requests a correction between
rounds, within the configured bounds; a second, different one confirms it within the configured time, and only
then is the meter corrected. Part of the supervisor's desk (supervision.py, ``JackpotSupervisor``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot import meter as mt
from controller.jackpot.config import METER_MAX, JackpotConfig
from controller.jackpot.records import alert, event, meter_record

REASON_MAX = 200  # characters of a correction's reason
CORRECTION_ALERT = "jackpot_correction"  # controller/alert_kinds.py
CORRECTION_DOC_KEYS = ("correction_id", "by", "value", "reason", "old_meter", "expires_at")


@dataclass(frozen=True, slots=True)
class SupervisorCall:
    """One supervisor action: who, with what, when, under which configuration (supervision.py dispatches it)."""

    user: str
    args: dict[str, Any]
    between_rounds: bool
    now: float
    config: JackpotConfig | None


class MeterCorrections:
    """The correction awaiting its second supervisor, and the number of the last one requested."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        d = data or {}
        # kept in the snapshot only when there is one or was one, so a table that never corrected its meter
        # keeps the snapshot it always had
        self.correction: dict[str, Any] | None = d.get("correction")
        self.correction_seq: int = int(d.get("correction_seq", 0))

    def snapshot(self) -> dict[str, Any]:
        """The snapshot's keys about corrections, present only once a correction was requested."""
        return {
            **({"correction": dict(self.correction)} if self.correction else {}),
            **({"correction_seq": self.correction_seq} if self.correction_seq else {}),
        }

    def pending(self) -> dict[str, Any] | None:
        """The correction awaiting its second supervisor (``jackpot_correct_confirm``), if any."""
        return dict(self.correction) if self.correction else None

    def doc(self) -> dict[str, Any] | None:
        """``pending_correction`` of ``state/jackpot``; None: no correction awaits its confirmation."""
        if not self.correction:
            return None
        c = self.correction
        return {k: c[k] for k in CORRECTION_DOC_KEYS}

    def request(self, fx: list[Effect], call: SupervisorCall, meter: mt.MeterState) -> mt.MeterState:
        """A correction is requested by one supervisor and made only when a second, different one confirms it
        (``jackpot_correct_confirm``) within the configured time; between rounds, within the bounds."""
        if not call.between_rounds:
            raise Rejected("jackpot_correct: only between rounds")
        value = call.args.get("value")
        reason = call.args.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
            raise Rejected(f"jackpot_correct: a reason of 1-{REASON_MAX} characters is required")
        config = call.config
        assert config is not None
        pending = self.correction
        if pending is not None and call.now <= pending["expires_at"]:
            raise Rejected(
                f"jackpot_correct: correction {pending['correction_id']} by {pending['by']} awaits its "
                "confirmation: confirm it or let it expire first"
            )
        old = meter.display_value
        _check_bounds(value, old, meter, config)
        self.correction_seq += 1
        self.correction = {
            "correction_id": self.correction_seq,
            "by": call.user,
            "value": value,
            "reason": reason,
            "old_meter": old,
            "requested_at": call.now,
            "expires_at": call.now + config.confirm_s,
        }
        fx.append(JournalRecord("jackpot_correction_requested", dict(self.correction)))
        event(
            fx,
            "correction_requested",
            correction_id=self.correction_seq,
            by=call.user,
            reason=reason,
            old_meter=old,
            meter=value,
        )
        return meter

    def confirm(self, fx: list[Effect], call: SupervisorCall, meter: mt.MeterState) -> mt.MeterState:
        """The second supervisor's approval of the pending correction (dual control)."""
        user = call.user
        if not call.between_rounds:
            raise Rejected("jackpot_correct_confirm: only between rounds")
        pending = self.correction
        cid = call.args.get("correction_id")
        if pending is None or isinstance(cid, bool) or cid != pending["correction_id"]:
            have = pending["correction_id"] if pending else "none"
            raise Rejected(
                f"jackpot_correct_confirm: no pending correction {str(cid)[:20]!r} (pending: {have})"
            )
        if user == pending["by"]:
            raise Rejected(
                f"jackpot_correct_confirm: {user} requested correction {cid}; a different supervisor confirms it"
            )
        if call.now > pending["expires_at"]:
            raise Rejected(f"jackpot_correct_confirm: correction {cid} expired; request it again")
        old = meter.display_value
        if old != pending["old_meter"]:
            raise Rejected(
                f"jackpot_correct_confirm: the meter moved from {pending['old_meter']} to {old} since correction "
                f"{cid} was requested; request it again"
            )
        assert call.config is not None
        _check_bounds(pending["value"], old, meter, call.config)
        meter, rec = mt.correct(meter, pending["value"], pending["by"], pending["reason"])
        self.correction = None
        meter_record(fx, rec, meter, confirmed_by=user, correction_id=cid)
        details = {
            "correction_id": cid,
            "by": pending["by"],
            "confirmed_by": user,
            "reason": pending["reason"],
            "old_meter": old,
            "meter": meter.display_value,
        }
        event(fx, "correction", **details)
        alert(
            fx,
            CORRECTION_ALERT,
            "critical",
            f"jackpot meter corrected from {old} to {meter.display_value} by {pending['by']}, "
            f"confirmed by {user}: {pending['reason']}",
            **{k: v for k, v in details.items() if k != "reason"},
            why=pending["reason"],
        )
        return meter


def _check_bounds(value: Any, old: int, meter: mt.MeterState, config: JackpotConfig) -> None:
    """Never below the seed (PT-2001 r.44), never above the ceiling, at most the maximum change."""
    if meter.pending:
        raise Rejected("jackpot_correct: a hit is pending verification; settle it first (PT-2001 r.49)")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= METER_MAX:
        raise Rejected(
            f"jackpot_correct: value must be an integer amount in minor units from 0 to {METER_MAX}, "
            f"got {str(value)[:40]!r}"
        )
    if value < meter.seed:
        raise Rejected(f"jackpot_correct: {value} is below the seed {meter.seed} (PT-2001 r.44)")
    if value > config.ceiling:
        raise Rejected(
            f"jackpot_correct: {value} is above the ceiling {config.ceiling} (jackpot.correction_ceiling)"
        )
    if abs(value - old) > config.max_change:
        raise Rejected(
            f"jackpot_correct: a change of {value - old} from {old} exceeds the maximum "
            f"{config.max_change} per correction (jackpot.correction_max_change)"
        )
    if value == old:
        raise Rejected(f"jackpot_correct: the meter is already {old}")
