"""Supervisor actions: open and close the table, void a round, alerts, the jackpot's verify/pay/correct."""

from __future__ import annotations

import time
from typing import Any

from controller.actions import TECHNICIAN_ACTIONS
from controller.effects import Rejected
from controller.table.base import PROFILE_NAME_CHARS, SUPERVISOR_ROLES, CoreBase
from drivers import events as ev


class SupervisorActions(CoreBase):
    def _authorise(self, user: str, role: str, action: str) -> None:
        """Who may do what (PT-2001 r.49, r.51); the action itself is looked up in controller/table/dispatch.py."""
        if not user:
            raise Rejected("supervisor actions must name the user")
        if role not in SUPERVISOR_ROLES and not (role == "technician" and action in TECHNICIAN_ACTIONS):
            rule = "PT-2001 r.49" if action.startswith("jackpot_") else "PT-2001 r.51"  # r.49: verify and pay
            raise Rejected(f"{action} needs a chief inspector (supervisor), not role {role!r} ({rule})")

    def _sv_open_table(self, user: str, args: dict[str, Any]) -> None:
        self._allow("open_table", "open_table")  # closed, no service fault (machine.py)
        profile = args.get("profile") or self.profile_name
        if not profile:
            raise Rejected("open_table needs a rule profile")
        if not isinstance(profile, str) or not set(profile) <= PROFILE_NAME_CHARS or len(profile) > 64:
            raise Rejected("open_table takes a rule profile's name (e.g. 'pt-2001'), never a path")
        pinned = args.get("pinned")
        if isinstance(pinned, dict):  # the service's digests and profile text, journaled with open_table
            self.session.pinned = dict(pinned)
        default = "continuous" if self.device.continuous else "batch"  # unknown: continuous
        shuffler = args.get("shuffler", default)
        if shuffler not in ("continuous", "batch"):
            raise Rejected(f"shuffler must be 'continuous' or 'batch', got {shuffler!r}")
        try:
            self._set_profile(str(profile), shuffler)
        except Exception as exc:
            raise Rejected(f"cannot load profile {profile!r}: {exc}") from exc
        if isinstance(pinned, dict):
            self._record("configuration_pinned", **{k: v for k, v in pinned.items() if k != "profile_text"})
        self._fx.extend(self.jackpot.on_open_table(args, self.rules_profile))  # r.38: config AND profile
        allowed = self.rules_profile.shoe.shufflers
        if (shuffler == "continuous" and "continuous" not in allowed) or (
            shuffler == "batch" and "manual" not in allowed
        ):
            raise Rejected(
                f"profile {profile} does not allow a {shuffler} shoe (allowed: {', '.join(allowed)})"
            )
        self.session.update(
            id=time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.now)),
            no=self.session.no + 1,
            packets=0,
            opened_by=user,
            rounds=0,
        )
        self.round_no, self.uninserted, self.bets, self.chips = 0, [], {}, []
        self.inside, self.out = 0, 0
        self._go("open_table")
        if self.tp.continuous:
            # r.53-54: loaded in packets with the chief inspector present
            self._grant_opening("loading", unlock=True, open_lid=True)
        else:
            self._cmd(ev.StartShuffle())  # batch shoe: shuffled, then cut (PT-2001 r.8)
        self._result = {"session_id": self.session.id}

    def _sv_close_table(self, user: str, args: dict[str, Any]) -> None:
        # issue 13 §2: the faulty session ends by closing it (integrity_close: no round interrupted)
        from_integrity = "integrity_close" in self.machine.get_triggers(self.machine_state)
        trigger = "integrity_close" if from_integrity else "close_table"  # close_table: no bets on the table
        self._allow(trigger, "close_table")
        if from_integrity:
            # placed, nothing dealt on them: returned to the players
            returned = {seat: bet.to_dict() for seat, bet in self.bets.items()}
            self.bets, self.chips = {}, []
        self.jackpot.check_close()  # PT-2001 r.49: a winning hand stays until paid
        if self.lid.state == "open" and self.state != "loading":
            raise Rejected("the lid is open: insert the cards and close it first (PT-2001 r.59-60)")
        self.lid.deadline = None
        if from_integrity:
            raised = self.faults.pop("integrity", None)
            info = raised.to_dict() if raised is not None else {}
            self._record(
                "integrity_cleared", user=user, at=self._ts(), fault=info, by="close_table", bets=returned
            )
            self._fault_event("integrity", "cleared", {"by": user})
            self._go("integrity_close")  # leaving the faults: resume_to forgotten (machine.py)
        else:
            self._go("close_table")
        self.round = None
        self.session.closed_by = user
        self._dealer_off_duty("close_table")
        if self.out > 0 and self.tp.continuous:  # the discard goes in before the inventory (PT-2001 r.55)
            self._grant_opening("closing", open_lid=True)
        elif self.out > 0:
            self._cmd(ev.StartShuffle())  # batch shoe: every card back in
        else:
            self._maybe_deck_check()

    def _sv_void_round(self, user: str, args: dict[str, Any]) -> None:
        if not self._round_active():
            raise Rejected("no round in progress to void")
        self.pending_replacement = None
        self._void(str(args.get("reason") or f"voided by supervisor {user}"), user=user)

    def _sv_ack_alert(self, user: str, args: dict[str, Any]) -> None:
        self._record("alert_acknowledged", user=user, alert=args)

    def _sv_jackpot_verify(self, user: str, args: dict[str, Any]) -> None:
        self._fx.extend(self.jackpot.supervisor("jackpot_verify", user, args, between_rounds=False))

    def _sv_jackpot_pay(self, user: str, args: dict[str, Any]) -> None:
        self._fx.extend(self.jackpot.supervisor("jackpot_pay", user, args, between_rounds=False))

    def _sv_jackpot_correct(self, user: str, args: dict[str, Any]) -> None:
        """One supervisor asks for a meter correction; it is made when another confirms it (dual control)."""
        between = not self._round_active()
        self._fx.extend(
            self.jackpot.supervisor("jackpot_correct", user, args, between_rounds=between, now=self.now)
        )
        pending = self.jackpot.pending_correction()
        if pending is not None:
            self._result = {"correction_id": pending["correction_id"], "confirm_by": pending["expires_at"]}

    def _sv_jackpot_correct_confirm(self, user: str, args: dict[str, Any]) -> None:
        between = not self._round_active()
        self._fx.extend(
            self.jackpot.supervisor(
                "jackpot_correct_confirm", user, args, between_rounds=between, now=self.now
            )
        )
