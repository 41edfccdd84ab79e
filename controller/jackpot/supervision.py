"""The supervisor's part of the table's jackpot (PT-2001 r.49-50): verify a hit on the table (or reject it),
pay it in the order r.50a sets, correct the meter between rounds; each recorded with who did it. Part of
``TableJackpot`` (controller/jackpot/table.py)."""

from __future__ import annotations

from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot import JackpotError
from controller.jackpot import meter as mt
from controller.jackpot.config import METER_MAX
from controller.words import COMBINATION_WORDS, money, words

SETTLED_KEPT = 64  # how many settled hit ids are remembered, to say "already paid" rather than "unknown"
REASON_MAX = 200  # characters of a correction's reason
CORRECTION_ALERT = "jackpot_correction"  # controller/alert_kinds.py


class JackpotSupervision:
    """Attributes: see ``TableJackpot.restore``."""

    def supervisor(
        self, action: str, user: str, args: dict[str, Any], *, between_rounds: bool, now: float = 0.0
    ) -> list[Effect]:
        if self.meter is None:
            raise Rejected(f"{action}: {self.disabled_reason}")
        handler = {
            "jackpot_verify": self._verify,
            "jackpot_pay": self._pay,
            "jackpot_correct": self._correct,
            "jackpot_correct_confirm": self._correct_confirm,
        }[action]
        fx: list[Effect] = []
        self._now = now
        try:
            handler(fx, user, args, between_rounds)
        except JackpotError as exc:
            raise Rejected(str(exc)) from None
        return fx

    @staticmethod
    def _hit_id(args: dict[str, Any]) -> int:
        hit_id = args.get("hit_id")
        if isinstance(hit_id, bool) or not isinstance(hit_id, int):
            raise Rejected(f"hit_id must be an integer (a pending jackpot hit, PT-2001 r.49), got {hit_id!r}")
        return hit_id

    def _pending(self, hit_id: int) -> mt.PendingHit:
        """The pending hit ``hit_id``; else a refusal that says why (settled already, or never issued)."""
        assert self.meter is not None
        for h in self.meter.pending:
            if h.hit_id == hit_id:
                return h
        if str(hit_id) in self.settled:
            raise Rejected(
                f"jackpot hit {hit_id} was already {self.settled[str(hit_id)]}: a hit is settled once "
                "(PT-2001 r.49)"
            )
        if 1 <= hit_id < self.meter.next_hit_id:
            raise Rejected(f"jackpot hit {hit_id} is already settled (paid or rejected) (PT-2001 r.49)")
        pending = [h.hit_id for h in self.meter.pending]
        raise Rejected(f"no pending jackpot hit {hit_id} (pending: {pending or 'none'}; PT-2001 r.49)")

    def _remember(self, hit_id: int, what: str) -> None:
        self.settled[str(hit_id)] = what
        while len(self.settled) > SETTLED_KEPT:
            del self.settled[next(iter(self.settled))]

    def _verify(self, fx: list[Effect], user: str, args: dict[str, Any], between_rounds: bool) -> None:
        """PT-2001 r.49: a supervisor checks the hand on the table; ``valid: false`` (+ reason) rejects it."""
        hit = self._pending(self._hit_id(args))
        if hit.hit_id in self.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} is already verified: pay it (PT-2001 r.49)")
        valid = args.get("valid", True)
        if not isinstance(valid, bool):
            raise Rejected(f"valid must be true or false, got {valid!r}")
        if valid:
            self.verified.append(hit.hit_id)
            fx.append(JournalRecord("jackpot_verified", {"hit_id": hit.hit_id, "seat": hit.seat, "by": user}))
            self._event(fx, "verified", hit_id=hit.hit_id, seat=hit.seat, round_id=hit.round_id, by=user)
            return
        reason = str(args.get("reason") or "")
        assert self.meter is not None
        # r.43a/r.50: a rejected hit's share goes back to the hits still pending
        self.meter, records = mt.reject(self.meter, hit.hit_id, user, reason)
        self._remember(hit.hit_id, f"rejected by {user}")
        for rec in records:
            self._meter_record(fx, rec)
        self._event(
            fx, "rejected", hit_id=hit.hit_id, seat=hit.seat, round_id=hit.round_id, by=user, reason=reason
        )
        self._after_settle(fx, records)

    def _pay(self, fx: list[Effect], user: str, args: dict[str, Any], between_rounds: bool) -> None:
        hit = self._pending(self._hit_id(args))
        if hit.hit_id not in self.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} must be verified by a supervisor first (PT-2001 r.49)")
        unverified = [h.hit_id for h in self.meter.pending if h.top and h.hit_id not in self.verified]
        if hit.top and unverified:
            # PT-2001 r.50b: tied top winners share the meter; a share is final only once every one of them
            # is verified (a rejected one leaves its part to the others, meter.reject re-shares).
            raise Rejected(
                f"jackpot hit {hit.hit_id}: verify the other top winner(s) {unverified} first, the top prize "
                "is shared between them (PT-2001 r.50b)"
            )
        if "amount" in args:  # optional: the amount the supervisor is about to hand over must be the award
            amount = args["amount"]
            if isinstance(amount, bool) or not isinstance(amount, int) or amount != hit.amount:
                raise Rejected(
                    f"jackpot hit {hit.hit_id}: amount {amount!r} (minor units) is not the award of "
                    f"{money(hit.amount, self.meter.currency if self.meter else None)} "
                    f"({words(COMBINATION_WORDS, hit.combination)}, PT-2001 r.43, r.50)"
                )
        assert self.meter is not None
        self.meter, records = mt.pay(self.meter, hit.hit_id, user)  # r.50a order enforced there
        self.verified.remove(hit.hit_id)
        self._remember(hit.hit_id, f"paid by {user}")
        for rec in records:
            self._meter_record(fx, rec)
        self._event(
            fx,
            "paid",
            hit_id=hit.hit_id,
            seat=hit.seat,
            round_id=hit.round_id,
            amount=hit.amount,
            by=user,
            meter=self.meter.display_value,
        )
        self._after_settle(fx, records)

    def _after_settle(self, fx: list[Effect], records: list[mt.MeterRecord]) -> None:
        assert self.meter is not None
        for rec in records:
            if rec.kind == "reset":  # PT-2001 r.44: back to the seed (+ reserve) after the top prize
                self._event(
                    fx, "reset", meter=self.meter.display_value, seed=self.meter.seed, reason="top prize paid"
                )

    def _correct(self, fx: list[Effect], user: str, args: dict[str, Any], between_rounds: bool) -> None:
        """A correction is requested by one supervisor and made only when a second, different one confirms it
        (``jackpot_correct_confirm``) within the configured time; between rounds, within the bounds."""
        if not between_rounds:
            raise Rejected("jackpot_correct: only between rounds")
        value = args.get("value")
        reason = args.get("reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
            raise Rejected(f"jackpot_correct: a reason of 1-{REASON_MAX} characters is required")
        assert self.meter is not None and self.config is not None
        pending = self.correction
        if pending is not None and self._now <= pending["expires_at"]:
            raise Rejected(
                f"jackpot_correct: correction {pending['correction_id']} by {pending['by']} awaits its "
                "confirmation: confirm it or let it expire first"
            )
        old = self.meter.display_value
        self._check_bounds(value, old)
        self.correction_seq += 1
        self.correction = {
            "correction_id": self.correction_seq,
            "by": user,
            "value": value,
            "reason": reason,
            "old_meter": old,
            "requested_at": self._now,
            "expires_at": self._now + self.config.confirm_s,
        }
        fx.append(JournalRecord("jackpot_correction_requested", dict(self.correction)))
        self._event(
            fx,
            "correction_requested",
            correction_id=self.correction_seq,
            by=user,
            reason=reason,
            old_meter=old,
            meter=value,
        )

    def _check_bounds(self, value: Any, old: int) -> None:
        """Never below the seed (PT-2001 r.44), never above the ceiling, at most the maximum change."""
        assert self.meter is not None and self.config is not None
        if self.meter.pending:
            raise Rejected("jackpot_correct: a hit is pending verification; settle it first (PT-2001 r.49)")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= METER_MAX:
            raise Rejected(
                f"jackpot_correct: value must be an integer amount in minor units from 0 to {METER_MAX}, "
                f"got {str(value)[:40]!r}"
            )
        if value < self.meter.seed:
            raise Rejected(f"jackpot_correct: {value} is below the seed {self.meter.seed} (PT-2001 r.44)")
        if value > self.config.ceiling:
            raise Rejected(
                f"jackpot_correct: {value} is above the ceiling {self.config.ceiling} (jackpot.correction_ceiling)"
            )
        if abs(value - old) > self.config.max_change:
            raise Rejected(
                f"jackpot_correct: a change of {value - old} from {old} exceeds the maximum "
                f"{self.config.max_change} per correction (jackpot.correction_max_change)"
            )
        if value == old:
            raise Rejected(f"jackpot_correct: the meter is already {old}")

    def _correct_confirm(
        self, fx: list[Effect], user: str, args: dict[str, Any], between_rounds: bool
    ) -> None:
        """The second supervisor's approval of the pending correction (dual control)."""
        if not between_rounds:
            raise Rejected("jackpot_correct_confirm: only between rounds")
        pending = self.correction
        cid = args.get("correction_id")
        if pending is None or isinstance(cid, bool) or cid != pending["correction_id"]:
            have = pending["correction_id"] if pending else "none"
            raise Rejected(
                f"jackpot_correct_confirm: no pending correction {str(cid)[:20]!r} (pending: {have})"
            )
        if user == pending["by"]:
            raise Rejected(
                f"jackpot_correct_confirm: {user} requested correction {cid}; a different supervisor confirms it"
            )
        if self._now > pending["expires_at"]:
            raise Rejected(f"jackpot_correct_confirm: correction {cid} expired; request it again")
        assert self.meter is not None
        old = self.meter.display_value
        if old != pending["old_meter"]:
            raise Rejected(
                f"jackpot_correct_confirm: the meter moved from {pending['old_meter']} to {old} since correction "
                f"{cid} was requested; request it again"
            )
        self._check_bounds(pending["value"], old)
        self.meter, rec = mt.correct(self.meter, pending["value"], pending["by"], pending["reason"])
        self.correction = None
        self._meter_record(fx, rec, confirmed_by=user, correction_id=cid)
        details = {
            "correction_id": cid,
            "by": pending["by"],
            "confirmed_by": user,
            "reason": pending["reason"],
            "old_meter": old,
            "meter": self.meter.display_value,
        }
        self._event(fx, "correction", **details)
        self._alert(
            fx,
            CORRECTION_ALERT,
            "critical",
            f"jackpot meter corrected from {old} to {self.meter.display_value} by {pending['by']}, "
            f"confirmed by {user}: {pending['reason']}",
            **{k: v for k, v in details.items() if k != "reason"},
            why=pending["reason"],
        )
