"""The dealer's inputs: bets, jackpot chips, no more bets, play decisions, next round."""

from __future__ import annotations

from typing import Any

from controller.actions import engine_action
from controller.table import machine as m
from controller.table.base import CoreBase
from controller.table.effects import Rejected
from controller.table.rounds import (
    RoundTracker,
)
from controller.table.state import Bet
from drivers import events as ev


class DealerInputs(CoreBase):
    def _dealing_blocked(self) -> str | None:
        """Why no dealer input is accepted now (PT-2001 r.51), or None."""
        if self.state in m.FAULT_STATES:
            faults = ", ".join(sorted(self.faults)) or "resynchronising with the shoe"
            return f"dealing blocked: {faults} (PT-2001 r.51)"
        if self.pending_replacement is not None:
            return "dealing blocked: a damaged card awaits replacement by a chief inspector (PT-2001 r.51)"
        return None

    def _blocked(self) -> None:
        why = self._dealing_blocked()
        if why is not None:
            raise Rejected(why)

    def _clear_bet(self, args: dict[str, Any]) -> None:
        self._allow("clear_bet", "clear_bet")
        seat = self._seat(args)
        if self.bets.pop(str(seat), None) is None:
            raise Rejected(f"no bet on seat {seat}")
        if seat in self.chips:
            self.chips.remove(seat)
        self._record("bet_cleared", seat=seat)

    def _jackpot_chip(self, args: dict[str, Any]) -> None:
        self._allow("jackpot_chip", "jackpot_chip")
        seat = self._seat(args)
        if str(seat) not in self.bets:
            raise Rejected(f"seat {seat} has no main bet: no jackpot chip (PT-2001 r.45)")
        if seat in self.chips:
            raise Rejected(f"seat {seat} already has its one jackpot chip (PT-2001 r.47)")
        self.jackpot.manual_chip(seat)  # r.41b; refused while the jackpot is unplayable (r.41)
        self.chips.append(seat)
        self._record("jackpot_chip", seat=seat)

    def _seat(self, args: dict[str, Any]) -> int:
        seat = args.get("seat")
        if not isinstance(seat, int) or isinstance(seat, bool) or not 1 <= seat <= self.tp.seats:
            raise Rejected(f"seat must be an integer 1..{self.tp.seats} (PT-2001 r.2), got {seat!r}")
        return seat

    def _place_bet(self, args: dict[str, Any]) -> None:
        self._allow("place_bet", "place_bet")
        seat, amount = self._seat(args), args.get("amount")
        tp = self.tp
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise Rejected(f"amount must be an integer in minor units, got {amount!r}")
        rp = self.rules_profile
        if not tp.min_bet <= amount <= tp.max_bet:
            rule = rp.cite("bet_limits") if amount < tp.min_bet else rp.cite("max_bet")
            raise Rejected(f"bet {amount} outside the table limits {tp.min_bet}..{tp.max_bet} ({rule})")
        if rp.multiple_of_min and amount % tp.min_bet:
            # Refused at the bet, not only when the rules engine sees the round at no more bets.
            raise Rejected(
                f"bet {amount} is not a multiple of the minimum {tp.min_bet} ({rp.cite('bet_limits')})"
            )
        side = args.get("side_bets") or {}
        if not isinstance(side, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in side.values()
        ):
            raise Rejected(f"side_bets must map a side bet name to a positive integer amount, got {side!r}")
        self.bets[str(seat)] = Bet(amount=amount, side_bets=dict(side))
        self._record("bet_placed", seat=seat, amount=amount, side_bets=side)
        self._result = {"seat": seat, "amount": amount}

    def _no_more_bets(self) -> None:
        self._allow("close_bets", "no_more_bets")
        if not self.bets:
            raise Rejected("no bets on the table: bets come before the first card (PT-2001 r.13)")
        self.round_no += 1
        round_id = f"{self.session.id}-{self.round_no:04d}"
        main_bets = sorted(int(s) for s in self.bets)
        self.chips, chip_fx = self.jackpot.collect(
            round_id, main_bets, list(self.chips), seats=self.tp.seats, now=self.now
        )  # PT-2001 r.41, r.45, r.47: the chips accepted for this round
        self._fx.extend(chip_fx)
        bets = [
            {
                "seat": int(seat),
                "amount": b.amount,
                **({"side_bets": b.side_bets} if b.side_bets else {}),
                **({"jackpot_chip": True} if int(seat) in self.chips else {}),
            }
            for seat, b in sorted(self.bets.items(), key=lambda kv: int(kv[0]))
        ]
        # PT-2001 r.10 / MO-2004 art.4: shoe burn before the first round of a shoe, round burn every round
        burn = self.rules_profile.burn_before_round(shoe_start=self.shoe.first_round)
        try:
            self.round = RoundTracker(
                round_id,
                self.rules_profile,
                bets,
                burn,
                self.shoe.first_round,  # MO-2004 art.5.1.1: first card after the shoe-start burns
                engine_factory=self._engine_factory,
                make_card=self._make_card,
            )
        except Exception as exc:  # RuleViolation for the bets
            self.round_no -= 1
            raise Rejected(f"bets refused by the rules: {exc}") from exc
        self.shoe.first_round = False
        self.round_void = False
        if self.shoe.last_round == "next":
            self.shoe.last_round = round_id  # r.11: the warning card came out just before: this is the last
        chips, self.bets, self.chips = list(self.chips), {}, []
        self.session.rounds += 1
        self._go("close_bets")
        self._record("round_started", round_id=round_id, bets=bets, burn=burn, jackpot_chips=chips)
        self._event("round", round_id=round_id, phase="dealing", bets=bets, burn=burn)
        self._fx.extend(self.jackpot.on_no_more_bets(round_id, chips))  # r.48: chips collected, then the deal
        self._go("start_deal")
        self._result = {"round_id": round_id}

    def _play(self, action: str, args: dict[str, Any]) -> None:
        self._allow("play", action)
        kwargs: dict[str, Any] = {}
        for key in ("amount", "seat", "hand"):
            value = args.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Rejected(f"{key} must be a non-negative integer, got {value!r}")
            kwargs[key] = value
        try:
            self.round.act(engine_action(action), kwargs)
        except Exception as exc:  # RuleViolation names the rule
            raise Rejected(str(exc)) from exc
        self._record("dealer_action", round_id=self.round.round_id, action=action, **kwargs)
        self._event("round", round_id=self.round.round_id, phase="decision", action=action, **kwargs)
        self._advance()

    def _next_round(self, early: bool = False) -> None:
        """``early``: the bank reshuffles after this round (MO-2004 art.2.2.2), before the warning card."""
        self._allow("next_round", "next_round")
        if early and (self.tp.continuous or not self.rules_profile.shoe.reshuffle_after_any_round):
            raise Rejected(
                "reshuffle after any round is a shoe rule of MO-2004 art.2.2.2: not for this profile or a "
                "continuous shuffler (the shoe's last round comes with the warning card, PT-2001 r.11)"
            )
        if self.lid.state == "open":
            raise Rejected(
                "the lid is open: insert the round's cards and close the lid first (PT-2001 r.59-60)"
            )
        if self.tp.continuous and self.state == "settled" and self.lid.unlock == "auto":
            self._lid_not_opened("next round called before the lid opened")
        finished = self.round.round_id if self.round else None
        if not self.tp.continuous:
            self.uninserted = []  # batch shoe: the cards went to the discard; the next round begins
        self.round = None
        if early and finished is not None:
            self._record("reshuffle_requested", after_round=finished, rule="MO-2004 art.2.2.2")
            self.shoe.last_round = finished  # the bank's choice: this round closes the shoe
        if not self.tp.continuous and finished is not None and self.shoe.last_round == finished:
            self._go("reshuffle")  # r.11 (or MO-2004 art.2.2.2): that was the last round of the shoe
            self._cmd(ev.StartShuffle())
            self._record("reshuffle", after_round=finished)
            return
        self._go("next_round")
        self._record("betting_open")
