"""The supervisor's desk of the table's jackpot (PT-2001 r.49-50): verify a hit on the table (or reject it), pay
it in the order r.50a sets, correct the meter between rounds under dual control (correction.py); each recorded
with who did it.

``JackpotSupervisor`` owns its slice of the jackpot's state (the verified hits, the settled ones, and its
``MeterCorrections``); the meter and the configuration are ``TableJackpot``'s (table.py) and are passed in with
each action: an action returns the meter after it and its effects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot import JackpotError
from controller.jackpot import meter as mt
from controller.jackpot.config import JackpotConfig
from controller.jackpot.correction import MeterCorrections, SupervisorCall
from controller.jackpot.records import event, meter_record
from controller.words import COMBINATION_WORDS, money, words

SETTLED_KEPT = 64  # how many settled hit ids are remembered, to say "already paid" rather than "unknown"


class JackpotSupervisor:
    """The supervisor's jackpot actions and the state they keep (part of the core's snapshot via ``TableJackpot``)."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        d = data or {}
        self.verified: list[int] = list(d.get("verified", []))  # hit ids a supervisor verified
        # the last settled hits, "<hit_id>" -> "paid by X" / "rejected by X": a hit is never paid twice (r.49)
        self.settled: dict[str, str] = dict(d.get("settled", {}))
        self.corrections = MeterCorrections(d)  # correction.py: requested, awaiting the second supervisor
        self._handlers: dict[str, Callable[[list[Effect], SupervisorCall, mt.MeterState], mt.MeterState]] = {
            "jackpot_verify": self._verify,
            "jackpot_pay": self._pay,
            "jackpot_correct": self.corrections.request,
            "jackpot_correct_confirm": self.corrections.confirm,
        }

    # ================================================================ state
    def snapshot(self) -> dict[str, Any]:
        """The snapshot's keys of the supervisor's desk (``verified``, ``settled``, then any correction's)."""
        return {"verified": list(self.verified), "settled": dict(self.settled), **self.corrections.snapshot()}

    def is_verified(self, hit_id: int) -> bool:
        return hit_id in self.verified

    # ================================================================ actions
    def act(
        self,
        action: str,
        user: str,
        args: dict[str, Any],
        meter: mt.MeterState,
        config: JackpotConfig | None,
        *,
        between_rounds: bool,
        now: float,
    ) -> tuple[mt.MeterState, list[Effect]]:
        """Run ``action`` (``jackpot_verify``, ``jackpot_pay``, ``jackpot_correct``, ``jackpot_correct_confirm``):
        the meter after it and its effects. Raises ``Rejected`` naming why, having changed nothing."""
        handler = self._handlers[action]
        fx: list[Effect] = []
        try:
            meter = handler(fx, SupervisorCall(user, args, between_rounds, now, config), meter)
        except JackpotError as exc:
            raise Rejected(str(exc)) from None
        return meter, fx

    @staticmethod
    def _hit_id(args: dict[str, Any]) -> int:
        hit_id = args.get("hit_id")
        if isinstance(hit_id, bool) or not isinstance(hit_id, int):
            raise Rejected(f"hit_id must be an integer (a pending jackpot hit, PT-2001 r.49), got {hit_id!r}")
        return hit_id

    def _pending(self, meter: mt.MeterState, hit_id: int) -> mt.PendingHit:
        """The pending hit ``hit_id``; else a refusal that says why (settled already, or never issued)."""
        for h in meter.pending:
            if h.hit_id == hit_id:
                return h
        if str(hit_id) in self.settled:
            raise Rejected(
                f"jackpot hit {hit_id} was already {self.settled[str(hit_id)]}: a hit is settled once "
                "(PT-2001 r.49)"
            )
        if 1 <= hit_id < meter.next_hit_id:
            raise Rejected(f"jackpot hit {hit_id} is already settled (paid or rejected) (PT-2001 r.49)")
        pending = [h.hit_id for h in meter.pending]
        raise Rejected(f"no pending jackpot hit {hit_id} (pending: {pending or 'none'}; PT-2001 r.49)")

    def _remember(self, hit_id: int, what: str) -> None:
        self.settled[str(hit_id)] = what
        while len(self.settled) > SETTLED_KEPT:
            del self.settled[next(iter(self.settled))]

    def _verify(self, fx: list[Effect], call: SupervisorCall, meter: mt.MeterState) -> mt.MeterState:
        """PT-2001 r.49: a supervisor checks the hand on the table; ``valid: false`` (+ reason) rejects it."""
        user, args = call.user, call.args
        hit = self._pending(meter, self._hit_id(args))
        if hit.hit_id in self.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} is already verified: pay it (PT-2001 r.49)")
        valid = args.get("valid", True)
        if not isinstance(valid, bool):
            raise Rejected(f"valid must be true or false, got {valid!r}")
        if valid:
            self.verified.append(hit.hit_id)
            fx.append(JournalRecord("jackpot_verified", {"hit_id": hit.hit_id, "seat": hit.seat, "by": user}))
            event(fx, "verified", hit_id=hit.hit_id, seat=hit.seat, round_id=hit.round_id, by=user)
            return meter
        reason = str(args.get("reason") or "")
        # r.43a/r.50: a rejected hit's share goes back to the hits still pending
        meter, records = mt.reject(meter, hit.hit_id, user, reason)
        self._remember(hit.hit_id, f"rejected by {user}")
        for rec in records:
            meter_record(fx, rec, meter)
        event(fx, "rejected", hit_id=hit.hit_id, seat=hit.seat, round_id=hit.round_id, by=user, reason=reason)
        _after_settle(fx, records, meter)
        return meter

    def _pay(self, fx: list[Effect], call: SupervisorCall, meter: mt.MeterState) -> mt.MeterState:
        user, args = call.user, call.args
        hit = self._pending(meter, self._hit_id(args))
        if hit.hit_id not in self.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} must be verified by a supervisor first (PT-2001 r.49)")
        unverified = [h.hit_id for h in meter.pending if h.top and h.hit_id not in self.verified]
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
                    f"{money(hit.amount, meter.currency)} "
                    f"({words(COMBINATION_WORDS, hit.combination)}, PT-2001 r.43, r.50)"
                )
        meter, records = mt.pay(meter, hit.hit_id, user)  # r.50a order enforced there
        self.verified.remove(hit.hit_id)
        self._remember(hit.hit_id, f"paid by {user}")
        for rec in records:
            meter_record(fx, rec, meter)
        event(
            fx,
            "paid",
            hit_id=hit.hit_id,
            seat=hit.seat,
            round_id=hit.round_id,
            amount=hit.amount,
            by=user,
            meter=meter.display_value,
        )
        _after_settle(fx, records, meter)
        return meter


def _after_settle(fx: list[Effect], records: list[mt.MeterRecord], meter: mt.MeterState) -> None:
    for rec in records:
        if rec.kind == "reset":  # PT-2001 r.44: back to the seed (+ reserve) after the top prize
            event(fx, "reset", meter=meter.display_value, seed=meter.seed, reason="top prize paid")
