"""The shoe's lid: opened by the machine after the round, locked otherwise, tamper, the lid switch, the lid timeout
(PT-2001 r.60-62)."""

from __future__ import annotations

from typing import Any

from controller.actions import CHIP_SLOT_PREFIX
from controller.effects import Rejected
from controller.table.base import CoreBase
from controller.table.lid_machine import OPENED, REPORT_TRIGGER
from controller.table.state import TamperFault
from drivers import events as ev


class Lid(CoreBase):
    def _on_LidChanged(self, e: ev.LidChanged) -> None:
        """The shoe's lid report; where it leads and what it means is the lid machine's (lid_machine.py)."""
        state = str(e.state)
        lid_event: dict[str, Any] = {"state": state, "previous": self.lid.state}
        if self.lid.unlock:
            lid_event["by"] = str(self.lid.unlock)
        self._event("lid", **lid_event)
        self._record("lid", state=state, unlocked_by=self.lid.unlock)
        auto_before, self.lid.auto_before_restart = self.lid.auto_before_restart, False  # read once
        self.lid_machine.model.trigger(REPORT_TRIGGER[e.state], restart_opening=auto_before)

    # ---- what the lid machine's transitions run (lid_machine.LidOwner)
    def _lid_opened_before_restart(self) -> None:
        # The opening the restart interrupted: not tamper, but no longer an unlock either. The restart ended the
        # lid cycle (the cards are carried, PT-2001 r.61) and the table is in a fault until it has counted the
        # cards, so the lock output stays locked: the lid latches when it is closed (product guide: on any
        # fault the lid stays locked; PT-2001 r.60).
        self._record("lid_opened_before_restart", at=self._ts())

    def _lid_opened_as_granted(self) -> None:
        self.lid.deadline = None  # it opened in time (r.61)

    def _lid_closed(self) -> None:
        # closed: lock again (PT-2001 r.60); the continuous shuffler starts shuffling by itself
        if self.lid.unlock is not None:
            self._relock()

    def _lid_is_open(self) -> bool:
        """Open or forced open (the lid machine's ``opened``): nothing is locked or counted until it closes."""
        return self.lid.state in OPENED

    # ---- the one writer of ``lid.unlock`` (the lid_lock output is derived from it, outputs.py)
    def _grant_opening(self, why: str, *, unlock: bool = False, open_lid: bool = False) -> None:
        """The lid may open now, and why ("auto", "loading", "closing", "supervisor:<user>"); ``unlock`` /
        ``open_lid``: tell the shoe to release its lock / to open the lid."""
        self.lid.unlock = why
        if unlock:
            self._cmd(ev.UnlockLid())
        if open_lid:
            self._cmd(ev.OpenLid())

    def _relock(self, *, command: bool = True) -> None:
        """No opening allowed any more: locked (``command``: tell the shoe; False when it is already told)."""
        self.lid.unlock = None
        if command:
            self._cmd(ev.LockLid())

    def _tamper(self, reason: str) -> None:
        # Closed, or after a failed deck check (PT-2001 r.55): no session runs, so no fault state to enter;
        # the opening is still a critical alert.
        if "tamper" not in self.faults and self.may_forced():
            self._enter_fault("tamper", "forced", TamperFault(at=self._ts()))
        self._alert("tamper", "critical", reason)

    def _lid_not_opened(self, why: str) -> None:
        """PT-2001 r.61: the cards stay in the discard, to go in with the next round whose lid opens."""
        self.lid.deadline = None
        self._relock()
        self._record("lid_not_opened", reason=why, carried=self.uninserted)
        self._event(
            "shoe", procedure="cards_carried", rounds=self.uninserted, reason=why, rule="PT-2001 r.61"
        )

    def _sv_unlock_lid(self, user: str, args: dict[str, Any]) -> None:
        """Only the machine or an authorised supervisor opens the lid (PT-2001 r.51, r.60)."""
        self._grant_opening(f"supervisor:{user}", unlock=True)

    def _sv_lock_lid(self, user: str, args: dict[str, Any]) -> None:
        if self._lid_is_open():
            raise Rejected("the lid is open: close it before locking")
        self._relock()
        if "tamper" in self.faults:
            self._record("tamper_cleared", user=user, at=self._ts())
            self._clear_fault("tamper")

    def _tick(self) -> None:
        deadline = self.lid.deadline
        due = self.lid.unlock == "auto" and deadline is not None and self.now >= deadline
        if due and self.lid.state != "open":
            self._lid_not_opened("lid did not open after the round")

    def _gpio(self, name: str, value: bool) -> None:
        if name == "lid_switch":  # True: the lid is open
            self._record("lid_switch", open=value)
            if value and self.lid.unlock is None:
                self._tamper("lid switch open while the lid is locked (PT-2001 r.60)")
        elif name.startswith(CHIP_SLOT_PREFIX) and name[len(CHIP_SLOT_PREFIX) :].isdigit():  # PT-2001 r.41a
            rnd = self.round if self._round_active() else None
            self._fx.extend(
                self.jackpot.on_chip_sensor(
                    int(name[len(CHIP_SLOT_PREFIX) :]),
                    value,
                    betting=self.state == "betting",
                    round_id=rnd.round_id if rnd else None,
                    seats=self.tp.seats if self.tp else 0,
                    now=self.now,
                )
            )
        else:
            self._record("gpio_input", name=name, value=value)
