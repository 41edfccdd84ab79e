"""The dealer on duty (issue 29): a dealer signs in at the pit terminal between rounds; the name is journaled,
published on ``events/dealer`` and shown in ``state/table`` as ``dealer`` while someone is signed in (absent
otherwise); it survives a restart (snapshot) and ends when the table is closed. The floor attributes each round's
settlement to the dealer on duty at that time (floor/reports/shift.py)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from controller.actions import DEALER
from controller.effects import Rejected
from controller.table.concern import Handlers, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink

# A person's name as the pit shows it: letters and digits of any script, inner spaces, dots, apostrophes and
# hyphens; 1-32 characters, no control or format character, no leading/trailing space (fullmatch).
DEALER_NAME = re.compile(r"[^\W_](?:[\w .'-]{0,30}[\w.])?")
DEALER_NAME_MAX = 32


def dealer_name(value: Any) -> str:
    """The name as given, or ``Rejected`` saying why it is not a name."""
    if not isinstance(value, str) or not value.isprintable() or not DEALER_NAME.fullmatch(value):
        shown = value[:40] if isinstance(value, str) else value
        raise Rejected(
            f"dealer name must be 1-{DEALER_NAME_MAX} letters, digits, spaces, dots, apostrophes or hyphens, "
            f"starting with a letter or digit; got {shown!r}"
        )
    return value


class DealerDuty:
    """Owns who is on duty (snapshot ``dealer_on_duty``, only while someone is)."""

    name: ClassVar[str] = "dealer_duty"

    def __init__(self, fx: EffectSink, gate: Gate, setup: SetupFace) -> None:
        self.fx, self.gate, self.setup = fx, gate, setup
        self.on_duty: str | None = None

    def handlers(self) -> Handlers:
        return Handlers(dealer={"dealer_sign_in": self.sign_in})

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        if self.on_duty is not None:  # only while someone is signed in: older snapshots hold no such key
            snap["dealer_on_duty"] = self.on_duty

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.on_duty = snap.get("dealer_on_duty")

    def sign_in(self, args: dict[str, Any]) -> None:
        """Between rounds only (not while a round is dealt, played or awaiting settlement)."""
        self.gate.allow(Trigger.DEALER_SIGN_IN, "dealer_sign_in")
        name = dealer_name(args.get("name"))
        previous = self.on_duty
        if name == previous:
            raise Rejected(f"{name} is already the dealer on duty")
        self.on_duty = name
        self.fx.record(RecordKind.DEALER_SIGNED_IN, dealer=name, previous=previous, at=self.fx.ts())
        session_id = self.setup.session.id
        self.fx.event("dealer", action="signed_in", dealer=name, previous=previous, session_id=session_id)

    def by(self) -> str:
        """Who a dealer command was given by: the dealer on duty, or the role ("dealer") when nobody signed in."""
        return self.on_duty if self.on_duty is not None else DEALER

    def off_duty(self, reason: str) -> None:
        """The table closes: nobody is on duty (nothing recorded when nobody was)."""
        previous = self.on_duty
        if previous is None:
            return
        self.on_duty = None
        self.fx.record(RecordKind.DEALER_SIGNED_OUT, dealer=previous, reason=reason, at=self.fx.ts())
        session_id = self.setup.session.id
        self.fx.event("dealer", action="signed_out", dealer=previous, reason=reason, session_id=session_id)
