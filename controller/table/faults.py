"""Faults and recovery: jams, shoe line faults, journal and integrity faults; entering and clearing fault states
(PT-2001 r.51)."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.effects import Rejected
from controller.table.base import FAULT_TRIGGER
from controller.table.concern import Handlers, LidFace, RoundsFace
from controller.table.gate import Gate
from controller.table.machine_names import Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import (
    FaultInfo,
    IntegrityFault,
    JamFault,
    JournalFault,
    LinkFault,
    ShoeLineFault,
    TamperFault,
    Unlock,
    fault_from_dict,
)
from drivers import events as ev

SHOE_LINE_ALERT = "the card is not dealt; dealing blocked until a supervisor clears it (clear_shoe_fault)"


class Faults:
    """Owns the raised faults (snapshot ``faults``: name -> ``FaultInfo``); entering one ends the lid's
    automatic opening (the lid, given), its events name the round (the rounds, given)."""

    name: ClassVar[str] = "faults"

    def __init__(self, fx: EffectSink, gate: Gate, lid: LidFace, rounds: RoundsFace) -> None:
        self.fx, self.gate, self.lid, self.rounds = fx, gate, lid, rounds
        self.raised: dict[str, FaultInfo] = {}  # "jam" -> JamFault, "link_down" -> LinkFault, ...

    def handlers(self) -> Handlers:
        return Handlers(
            device={
                ev.Jammed: self.on_jammed,
                ev.JamCleared: self.on_jam_cleared,
                ev.DeviceError: self.on_device_error,
            },
            supervisor={
                "clear_jam": self.sv_clear_jam,
                "lock_lid": self.sv_lock_lid,
                "clear_shoe_fault": self.sv_clear_shoe_fault,
                "clear_journal_io": self.sv_clear_journal_io,
                "clear_integrity": self.sv_clear_integrity,
            },
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["faults"] = {name: f.to_dict() for name, f in self.raised.items()}

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.raised = {name: fault_from_dict(name, d) for name, d in snap["faults"].items()}

    def names(self) -> list[str]:
        """The raised faults' names, sorted."""
        return sorted(self.raised)

    def get(self, name: str) -> Any:  # the raised fault's info (its class per name: state.FAULT_TYPES)
        return self.raised.get(name)

    def take(self, name: str) -> FaultInfo | None:
        """The fault ends without a transition of its own (the caller's carries the table out of it)."""
        return self.raised.pop(name, None)

    def mark_cleared_by(self, name: str, user: str) -> None:
        fault = self.raised[name]
        if isinstance(fault, JamFault | LinkFault | ShoeLineFault):
            fault.cleared_by = user

    def set_link(self, *, restored: bool, reason: str | None = None) -> None:
        link = self.raised["link_down"]
        if isinstance(link, LinkFault):
            link.restored = restored
            if reason is not None:
                link.reason = reason

    def _jam(self) -> JamFault | None:
        jam = self.raised.get("jam")
        return jam if isinstance(jam, JamFault) else None

    def tamper(self, reason: str) -> None:
        # Closed, or after a failed deck check (PT-2001 r.55): no session runs, so no fault state to enter;
        # the opening is still a critical alert.
        if "tamper" not in self.raised and self.gate.may(Trigger.FORCED):
            self.enter("tamper", Trigger.FORCED, TamperFault(at=self.fx.ts()))
        self.fx.alert("tamper", "critical", reason)

    def sv_lock_lid(self, user: str, args: dict[str, Any]) -> None:
        if self.lid.is_open():
            raise Rejected("the lid is open: close it before locking")
        self.lid.relock()
        if "tamper" in self.raised:
            self.fx.record(RecordKind.TAMPER_CLEARED, user=user, at=self.fx.ts())
            self.clear("tamper")

    def shoe_line_fault(self, name: str, reason: str, **info: Any) -> None:
        """``shoe_sequence`` / ``card_count`` (issue 13 §5): raised at once, like a jam (PT-2001 r.51): lid
        locked, light on, dealing refused (the caller raises the critical alert); a supervisor clears it
        (``clear_shoe_fault``)."""
        self.fx.record(RecordKind(name), reason=reason, at=self.fx.ts(), state=self.gate.state, **info)
        if name not in self.raised and self.gate.may(FAULT_TRIGGER[name]):
            fault = ShoeLineFault.from_dict({"reason": reason, **info, "cleared_by": None})
            self.enter(name, FAULT_TRIGGER[name], fault)

    def on_jammed(self, e: ev.Jammed) -> None:
        self.fx.record(RecordKind.JAM, location=str(e.location), at=self.fx.ts(), state=self.gate.state)
        if not self.gate.may(Trigger.JAM):  # no session: no fault state to enter
            self.fx.alert("jam", "warning", "jam reported while the table is closed (PT-2001 r.51)")
            return
        self.enter("jam", Trigger.JAM, JamFault(location=str(e.location)))
        self.fx.alert(
            "jam",
            "critical",
            "shoe jammed: call a chief inspector, who alone opens the lid (PT-2001 r.51)",
            location=str(e.location),
        )

    def on_jam_cleared(self, e: ev.JamCleared) -> None:
        jam = self._jam()
        if jam is None:
            return
        jam.device_cleared = True
        self.fx.record(RecordKind.JAM_CLEARED_BY_DEVICE)
        if jam.cleared_by:
            self.clear("jam")

    def on_device_error(self, e: ev.DeviceError) -> None:
        """An error the shoe or the card reader reports by itself: journaled with its code and text and
        alerted, never dropped (CONTRIBUTING: bad input is counted, logged and reported with a reason)."""
        self.fx.record(RecordKind.DEVICE_ERROR, code=e.code, text=e.text, state=self.gate.state)
        self.fx.alert(
            "device_error", "warning", f"shoe reported error {e.code}: {e.text or 'no text'}", code=e.code
        )

    def sv_clear_jam(self, user: str, args: dict[str, Any]) -> None:
        jam = self._jam()
        if jam is None:
            raise Rejected("no jam to clear")
        if not jam.device_cleared:
            raise Rejected(f"the shoe still reports a jam ({jam.location}): clear it first (PT-2001 r.51)")
        jam.cleared_by = user
        self.fx.record(RecordKind.JAM_CLEARED, user=user, at=self.fx.ts(), location=jam.location)
        self.clear("jam")

    def sv_clear_shoe_fault(self, user: str, args: dict[str, Any]) -> None:
        """An authorised person ends a shoe-line fault (``shoe_sequence``, ``card_count``) after looking at the
        shoe; the resync that follows counts the cards inside (cards unaccounted for void the round)."""
        raised = [f for f in ("shoe_sequence", "card_count") if f in self.raised]
        name = args.get("fault") or (raised[0] if len(raised) == 1 else None)
        if name not in raised:
            raise Rejected(
                f"no such shoe-line fault to clear: {args.get('fault')!r} (raised: {raised or 'none'})"
            )
        self.mark_cleared_by(name, user)
        self.fx.record(RecordKind.SHOE_FAULT_CLEARED, fault=name, user=user, at=self.fx.ts())
        self.clear(name)

    def sv_clear_journal_io(self, user: str, args: dict[str, Any]) -> None:
        """The journal writes again (this action's own commit proves it): the fault ends, the cards are
        counted (resync) as after any fault; an authorised person decides it, as for a jam (PT-2001 r.51)."""
        info = self.raised.get("journal_io")
        if info is None:
            raise Rejected("no journal_io fault to clear")
        self.fx.record(RecordKind.JOURNAL_IO_CLEARED, user=user, at=self.fx.ts(), fault=info)
        self._clear_service("journal_io", user)

    def sv_clear_integrity(self, user: str, args: dict[str, Any]) -> None:
        """On a closed table only; in a session the supervisor closes the table (close_table) instead."""
        info = self.raised.get("integrity")
        if info is None:
            raise Rejected("no integrity fault to clear")
        if self.gate.may(Trigger.INTEGRITY_FAILED):  # a session runs
            raise Rejected("the integrity fault of an open session ends when a supervisor closes the table")
        self.fx.record(
            RecordKind.INTEGRITY_CLEARED, user=user, at=self.fx.ts(), fault=info, by="clear_integrity"
        )
        self._clear_service("integrity", user)

    def journal_fault(self, kind: str, text: str) -> None:
        """Issue 14 item 3: a journal write failed. Lid locked (GPIO and the shoe), light on, dealing refused,
        a critical alert. The shell publishes these effects without the journal and commits them once it can."""
        info = JournalFault(kind=kind, reason=text, at=self.fx.ts())
        if "journal_io" in self.raised:
            self.raised["journal_io"] = info
            return
        self.lock_for_service_fault()
        self._enter_service("journal_io", Trigger.JOURNAL_FAILED, info)
        self.fx.alert(
            "journal_io",
            "critical",
            f"{text}: nothing more can be recorded; dealing refused, lid locked until a supervisor clears it",
            kind=kind,
        )

    def integrity_fault(self, reason: str, details: dict[str, Any]) -> None:
        """Issue 13 §1-2: the journal chain, a snapshot or the configuration pinned by the session does not
        check out. Dealing refused until a supervisor closes the table (clear_integrity when closed)."""
        info = IntegrityFault.from_dict({"reason": reason, "at": self.fx.ts(), **details})
        if "integrity" in self.raised:
            self.raised["integrity"] = info
            return
        self.lock_for_service_fault()
        self._enter_service("integrity", Trigger.INTEGRITY_FAILED, info)
        self.fx.alert(
            "integrity",
            "critical",
            f"{reason}: dealing refused until a supervisor closes the table",
            **details,
        )

    def lock_for_service_fault(self) -> None:
        if self.lid.unlock not in (None, Unlock.AUTO):  # auto: enter() ends the lid cycle itself
            self.lid.relock()

    def _enter_service(self, name: str, trigger: Trigger, info: FaultInfo) -> None:
        if not self.gate.may(
            trigger
        ):  # no session: listed in state/table.faults, light on, open_table refused
            self.raised[name] = info
            self.event(name, "raised", info)
            return
        self.enter(name, trigger, info)

    def _clear_service(self, name: str, user: str) -> None:
        if not self.gate.may(FAULT_TRIGGER[name]):  # no session: nothing to resume or count
            self.raised.pop(name, None)
            self.event(name, "cleared", {"by": user})
            return
        self.clear(name)

    def enter(self, name: str, trigger: Trigger, info: FaultInfo) -> None:
        """Callers asked the machine (``may_<trigger>``); entering it remembers ``resume_to`` (machine.py)."""
        self.raised[name] = info
        self.gate.go(trigger)
        self.lid.no_deadline()
        if self.lid.unlock == Unlock.AUTO:
            self.lid.not_opened(f"{name} during the lid cycle", self.rounds.uninserted)
        self.event(name, "raised", info)

    def clear(self, name: str) -> None:
        self.raised.pop(name, None)
        self.event(name, "cleared", {})
        if self.raised:  # another fault remains: show it
            other = sorted(self.raised)[0]
            self.gate.go(FAULT_TRIGGER[other])
            return
        self.gate.go(Trigger.FAULT_CLEARED)
        self.fx.cmd(ev.ReportCounts())  # resync: are all the round's cards accounted for?

    def event(self, name: str, state: str, info: FaultInfo | dict[str, Any]) -> None:
        if isinstance(info, FaultInfo):
            info = info.to_dict()
        if name == "jam":  # the jam has its own event type (PT-2001 r.51)
            jam: dict[str, Any] = {"state": "jammed" if state == "raised" else "cleared"}
            if state == "raised" and info.get("location") in ("input", "shuffler", "output", "unknown"):
                jam["location"] = info["location"]
            round_id = self.rounds.current_round_id()
            if round_id is not None:
                jam["round_id"] = round_id
            self.fx.event("jam", **jam)
        self.fx.event("fault", fault=name, state=state, info=info)
