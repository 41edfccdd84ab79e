"""Faults and recovery: jams, shoe line faults, journal and integrity faults; entering and clearing fault states
(PT-2001 r.51)."""

from __future__ import annotations

from typing import Any

from controller.effects import Rejected
from controller.table.base import FAULT_TRIGGER, CoreBase
from controller.table.state import FaultInfo, IntegrityFault, JamFault, JournalFault
from drivers import events as ev


class Faults(CoreBase):
    def _on_Jammed(self, e: ev.Jammed) -> None:
        self._record("jam", location=str(e.location), at=self._ts(), state=self.state)
        if not self.may_jam():  # no session: no fault state to enter
            self._alert("jam", "warning", "jam reported while the table is closed (PT-2001 r.51)")
            return
        self._enter_fault("jam", "jam", JamFault(location=str(e.location)))
        self._alert(
            "jam",
            "critical",
            "shoe jammed: call a chief inspector, who alone opens the lid (PT-2001 r.51)",
            location=str(e.location),
        )

    def _on_JamCleared(self, e: ev.JamCleared) -> None:
        jam = self.faults.get("jam")
        if jam is None:
            return
        jam.device_cleared = True
        self._record("jam_cleared_by_device")
        if jam.cleared_by:
            self._clear_fault("jam")

    def _on_DeviceError(self, e: ev.DeviceError) -> None:
        """An error the shoe or the card reader reports by itself: journaled with its code and text and
        alerted, never dropped (CONTRIBUTING: bad input is counted, logged and reported with a reason)."""
        self._record("device_error", code=e.code, text=e.text, state=self.state)
        self._alert(
            "device_error", "warning", f"shoe reported error {e.code}: {e.text or 'no text'}", code=e.code
        )

    def _sv_clear_jam(self, user: str, args: dict[str, Any]) -> None:
        jam = self.faults.get("jam")
        if jam is None:
            raise Rejected("no jam to clear")
        if not jam.device_cleared:
            raise Rejected(f"the shoe still reports a jam ({jam.location}): clear it first (PT-2001 r.51)")
        jam.cleared_by = user
        self._record("jam_cleared", user=user, at=self._ts(), location=jam.location)
        self._clear_fault("jam")

    def _sv_clear_shoe_fault(self, user: str, args: dict[str, Any]) -> None:
        """An authorised person ends a shoe-line fault (``shoe_sequence``, ``card_count``) after looking at the
        shoe; the resync that follows counts the cards inside (cards unaccounted for void the round)."""
        raised = [f for f in ("shoe_sequence", "card_count") if f in self.faults]
        name = args.get("fault") or (raised[0] if len(raised) == 1 else None)
        if name not in raised:
            raise Rejected(
                f"no such shoe-line fault to clear: {args.get('fault')!r} (raised: {raised or 'none'})"
            )
        self.faults[name].cleared_by = user
        self._record("shoe_fault_cleared", fault=name, user=user, at=self._ts())
        self._clear_fault(name)

    def _sv_clear_journal_io(self, user: str, args: dict[str, Any]) -> None:
        """The journal writes again (this action's own commit proves it): the fault ends, the cards are
        counted (resync) as after any fault; an authorised person decides it, as for a jam (PT-2001 r.51)."""
        info = self.faults.get("journal_io")
        if info is None:
            raise Rejected("no journal_io fault to clear")
        self._record("journal_io_cleared", user=user, at=self._ts(), fault=info)
        self._clear_service_fault("journal_io", user)

    def _sv_clear_integrity(self, user: str, args: dict[str, Any]) -> None:
        """On a closed table only; in a session the supervisor closes the table (close_table) instead."""
        info = self.faults.get("integrity")
        if info is None:
            raise Rejected("no integrity fault to clear")
        if self.may_integrity_failed():  # a session runs
            raise Rejected("the integrity fault of an open session ends when a supervisor closes the table")
        self._record("integrity_cleared", user=user, at=self._ts(), fault=info, by="clear_integrity")
        self._clear_service_fault("integrity", user)

    def _journal_fault(self, kind: str, text: str) -> None:
        """Issue 14 item 3: a journal write failed. Lid locked (GPIO and the shoe), light on, dealing refused,
        a critical alert. The shell publishes these effects without the journal and commits them once it can."""
        info = JournalFault(kind=kind, reason=text, at=self._ts())
        if "journal_io" in self.faults:
            self.faults["journal_io"] = info
            return
        self._lock_for_service_fault()
        self._enter_service_fault("journal_io", "journal_failed", info)
        self._alert(
            "journal_io",
            "critical",
            f"{text}: nothing more can be recorded; dealing refused, lid locked until a supervisor clears it",
            kind=kind,
        )

    def _integrity_fault(self, reason: str, details: dict[str, Any]) -> None:
        """Issue 13 §1-2: the journal chain, a snapshot or the configuration pinned by the session does not
        check out. Dealing refused until a supervisor closes the table (clear_integrity when closed)."""
        info = IntegrityFault.from_dict({"reason": reason, "at": self._ts(), **details})
        if "integrity" in self.faults:
            self.faults["integrity"] = info
            return
        self._lock_for_service_fault()
        self._enter_service_fault("integrity", "integrity_failed", info)
        self._alert(
            "integrity",
            "critical",
            f"{reason}: dealing refused until a supervisor closes the table",
            **details,
        )

    def _lock_for_service_fault(self) -> None:
        if self.lid.unlock not in (None, "auto"):  # "auto": _enter_fault ends the lid cycle itself
            self._relock()

    def _enter_service_fault(self, name: str, trigger: str, info: FaultInfo) -> None:
        if not self.may_trigger(
            trigger
        ):  # no session: listed in state/table.faults, light on, open_table refused
            self.faults[name] = info
            self._fault_event(name, "raised", info)
            return
        self._enter_fault(name, trigger, info)

    def _clear_service_fault(self, name: str, user: str) -> None:
        if not self.may_trigger(FAULT_TRIGGER[name]):  # no session: nothing to resume or count
            self.faults.pop(name, None)
            self._fault_event(name, "cleared", {"by": user})
            return
        self._clear_fault(name)

    def _enter_fault(self, name: str, trigger: str, info: FaultInfo) -> None:
        """Callers asked the machine (``may_<trigger>``); entering it remembers ``resume_to`` (machine.py)."""
        self.faults[name] = info
        self._go(trigger)
        self.lid.deadline = None
        if self.lid.unlock == "auto":
            self._lid_not_opened(f"{name} during the lid cycle")
        self._fault_event(name, "raised", info)

    def _clear_fault(self, name: str) -> None:
        self.faults.pop(name, None)
        self._fault_event(name, "cleared", {})
        if self.faults:  # another fault remains: show it
            other = sorted(self.faults)[0]
            self._go(FAULT_TRIGGER[other])
            return
        self._go("fault_cleared")
        self._cmd(ev.ReportCounts())  # resync: are all the round's cards accounted for?

    def _fault_event(self, name: str, state: str, info: FaultInfo | dict[str, Any]) -> None:
        if isinstance(info, FaultInfo):
            info = info.to_dict()
        if name == "jam":  # the jam has its own event type (PT-2001 r.51)
            jam: dict[str, Any] = {"state": "jammed" if state == "raised" else "cleared"}
            if state == "raised" and info.get("location") in ("input", "shuffler", "output", "unknown"):
                jam["location"] = info["location"]
            if self.round is not None:
                jam["round_id"] = self.round.round_id
            self._event("jam", **jam)
        self._event("fault", fault=name, state=state, info=info)
