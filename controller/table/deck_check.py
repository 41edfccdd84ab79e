"""The deck check that closes a session (PT-2001 r.55): every card back in, the shoe's inventory, its result
acknowledged by a supervisor."""

from __future__ import annotations

from typing import Any, ClassVar

from controller.table.base import _card_valid
from controller.table.concern import CycleFace, Handlers, LidFace, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import DeckCheck, Unlock
from drivers import events as ev
from drivers.cards import CARD_CODES
from drivers.events import LidState


class DeckChecks:
    """Owns the last deck check's result (snapshot ``deck_check``)."""

    name: ClassVar[str] = "deck_checks"

    def __init__(
        self, fx: EffectSink, gate: Gate, setup: SetupFace, lid: LidFace, shoe_cycle: CycleFace
    ) -> None:
        self.fx, self.gate, self.setup, self.lid, self.shoe_cycle = fx, gate, setup, lid, shoe_cycle
        self.check: DeckCheck | None = None

    def handlers(self) -> Handlers:
        return Handlers(
            device={ev.DeckCheckResult: self.on_deck_check_result},
            supervisor={"ack_deck_check": self.sv_ack_deck_check, "run_deck_check": self.sv_run_deck_check},
            counts={TableState.CLOSING: self.closing_report},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["deck_check"] = self.check.to_dict() if self.check is not None else None

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap)

    def closing_report(self, count: int, shuffled: bool) -> None:
        self.closing_count(count, returned=shuffled)

    def restore(self, snap: dict[str, Any]) -> None:
        check = snap["deck_check"]
        self.check = DeckCheck.from_dict(check) if check is not None else None

    def closing_count(self, count: int, *, returned: bool) -> None:
        """Closing (PT-2001 r.55): the count once the cards out went back in. ``returned``: the shuffle that
        follows their return (the lid cycle of a continuous shuffler, the batch shoe's reshuffle) is done, so
        cards still missing are a shortfall: flagged, and the inventory names them."""
        self.shoe_cycle.closing(count, self.setup.tp.total_cards)
        if (
            returned
            and self.shoe_cycle.out > 0
            and self.lid.unlock is None
            and self.lid.position != LidState.OPEN
        ):
            self.fx.alert(
                "deck_count",
                "critical",
                f"{self.shoe_cycle.out} card(s) short of {self.setup.tp.total_cards} after every card went back in "
                "(PT-2001 r.55)",
                count=count,
                expected=self.setup.tp.total_cards,
            )
            self.fx.record(RecordKind.DECK_SHORTFALL, count=count, expected=self.setup.tp.total_cards)
            self.fx.cmd(ev.RunDeckCheck())
            return
        self.maybe_deck_check()

    def maybe_deck_check(self) -> None:
        """The inventory needs every card inside, the lid shut and the shuffle done (PT-2001 r.55)."""
        if (
            self.gate.state == TableState.CLOSING
            and self.shoe_cycle.out == 0
            and not self.shoe_cycle.shuffling
            and not self.lid.is_open()
            and self.lid.unlock is None
        ):
            self.fx.cmd(ev.RunDeckCheck())

    def on_deck_check_result(self, e: ev.DeckCheckResult) -> None:
        """PT-2001 r.55: every deck complete: count and per-card inventory."""
        tp = self.setup.tp
        if tp is None:  # no session has loaded a profile: nothing to check the inventory against
            self.fx.record(
                RecordKind.DECK_CHECK_IGNORED, reason="no rule profile loaded", state=self.gate.state
            )
            return
        decks = tp.decks
        missing = {c: decks - e.counts.get(c, 0) for c in CARD_CODES if e.counts.get(c, 0) < decks}
        extra = {c: n - decks for c, n in e.counts.items() if _card_valid(c) and n > decks}
        unknown = {c: n for c, n in e.counts.items() if not _card_valid(c) and n}
        total = sum(e.counts.values()) + e.unreadable
        ok = not (missing or extra or unknown or e.unreadable) and total == decks * 52
        # extra: more copies of a card than decks (duplicated): the name docs/mqtt.md publishes
        check = DeckCheck(
            ok=ok, total=total, missing=missing, extra=extra, unknown=unknown, unreadable=e.unreadable
        )
        self.check = check
        self.fx.record(RecordKind.DECK_CHECK, state=self.gate.state, **check.to_dict())
        self.fx.event("deck_check", decks=decks, **check.to_dict())
        if self.gate.state != TableState.CLOSING:
            return
        if ok:
            if self.setup.tp.continuous:
                # cards taken out with the chief inspector present (r.55)
                self.lid.grant_opening(Unlock.CLOSING, unlock=True)
            self.fx.event("session", action="closed", session_id=self.setup.session.id)
            self.gate.go(Trigger.DECK_OK)
        else:
            self.fx.alert(
                "deck_check",
                "critical",
                "deck check failed: missing, extra or duplicated cards; reopening blocked (PT-2001 r.55)",
                **check.to_dict(),
            )
            self.gate.go(Trigger.DECK_BAD)

    def sv_ack_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.ACK_DECK_CHECK, "ack_deck_check")
        self.fx.record(
            RecordKind.DECK_CHECK_ACKNOWLEDGED, user=user, at=self.fx.ts(), deck_check=self.check
        )  # to_json
        self.gate.go(Trigger.ACK_DECK_CHECK)

    def sv_run_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self.gate.allow(Trigger.RUN_DECK_CHECK, "run_deck_check")
        self.fx.cmd(ev.RunDeckCheck())
