"""The retained state documents and the table view (docs/mqtt.md): published only when their text changed.

They read the table through one frozen ``TableView`` (view.py), built once per publish after the step changed
the state; the machine's ``may`` answers (the dealer inputs accepted now) through the gate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from controller.actions import DEALER_PLAY
from controller.canonical import canonical
from controller.effects import DocumentName, Effect, StateDocument
from controller.jackpot.seam import JackpotSeam
from controller.table import machine as m
from controller.table.concern import NO_HANDLERS, Handlers, PlayersFace
from controller.table.dealer import blocked_reason
from controller.table.gate import Gate
from controller.table.machine_names import Trigger
from controller.table.reporting import allowed_commands, round_state
from controller.table.sink import EffectSink
from controller.table.view import TableView
from drivers.events import LidState

_NAMES = {name.value: name for name in DocumentName}  # by text, without an enum lookup per document


class StateDocuments:
    """Owns the text last published per document (snapshot ``published``); reads the table through the view."""

    name: ClassVar[str] = "documents"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        jackpot: JackpotSeam,
        players: PlayersFace,
        table_view: Callable[[], TableView],
    ) -> None:
        self.fx, self.gate, self.jackpot, self.players = fx, gate, jackpot, players
        self.table_view = table_view  # the core's: the view of the table as it is now (view.py)
        self.published: dict[str, str] = {}  # JSON text of the last retained state document per topic

    def handlers(self) -> Handlers:
        return NO_HANDLERS

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["published"] = self.published  # so a restored core publishes exactly what the live one would

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.published = snap.get("published", {})

    def view(self) -> dict[str, Any]:
        """The table state as published (retained) and shown on the pit terminal."""
        return self._table(self.table_view(), None)

    def dealer_inputs(self) -> list[str]:
        """The dealer commands (controller/actions.py) the core would accept now (``_dealer_inputs``)."""
        return self._dealer_inputs(self.table_view(), None)

    def _table(self, v: TableView, allowed: Callable[[], list[str]] | None) -> dict[str, Any]:
        """``state/table``. ``allowed``: as for ``_dealer_inputs``."""
        rnd = v.round
        return {
            "state": v.state,
            "session_id": v.session_id,
            "profile": v.profile_name,
            "shuffler": v.shuffler,
            "round_id": rnd.round_id if rnd else None,
            "round_active": v.state in m.ROUND_ACTIVE or v.interrupted_round,
            "bets": {seat: bet.to_dict() for seat, bet in v.bets.items()},
            "contestable_rounds": list(v.uninserted),  # r.62: final but contestable until inserted
            "carried_rounds": [r for r in v.uninserted if not rnd or r != rnd.round_id],  # r.61
            "faults": sorted(v.faults),
            "resume_to": v.resume_to,
            "lid": str(v.lid),
            "lid_unlocked_by": v.lid_unlocked_by,
            "cards_inside": v.inside,
            "cards_out": v.out,
            "last_shoe_seq": v.last_seq,
            "last_round_of_shoe": v.last_round is not None,
            "awaiting_card_replacement": v.awaiting_replacement,
            "outputs": dict(v.outputs),
            # the open session's bet limits in minor units (the pit terminal's chips stay within them)
            "limits": {"min_bet": v.tp.min_bet, "max_bet": v.tp.max_bet} if v.tp else None,
            # the dealer inputs the core accepts now: the pit terminal enables exactly these
            "dealer_inputs": self._dealer_inputs(v, allowed),
            # the dealer on duty (issue 29), only while someone is signed in
            **({"dealer": v.dealer_on_duty} if v.dealer_on_duty is not None else {}),
        }

    def _dealer_inputs(self, v: TableView, allowed: Callable[[], list[str]] | None) -> list[str]:
        """The dealer commands (controller/actions.py) the core would accept now, from the machine's
        ``may_<trigger>()`` answers and, during play, the rules engine's allowed actions. Arguments (which seat,
        how much) are still checked when the input comes; everything else is decided here, once. ``allowed``:
        the round engine's ``allowed_commands``, when the caller already has them (``publish``)."""
        if blocked_reason(v.state, sorted(v.faults), v.awaiting_replacement) is not None:
            return []
        accepted: list[str] = []
        if self.gate.may(Trigger.PLACE_BET):
            accepted.append("place_bet")
        if v.bets and self.gate.may(Trigger.CLEAR_BET):
            accepted.append("clear_bet")
        if v.bets and self.gate.may(Trigger.CLOSE_BETS):
            accepted.append("no_more_bets")
        if self.gate.may(Trigger.JACKPOT_CHIP) and any(int(seat) not in v.chips for seat in v.bets):
            jackpot = self.jackpot.state_doc() or {}  # manual mode only (r.41b; automatic: sensed, r.41a)
            if jackpot.get("mode") == "manual" and jackpot.get("playable"):
                accepted.append("jackpot_chip")
        if self.gate.may(Trigger.NEXT_ROUND) and v.lid != LidState.OPEN:  # closed first (r.59-60)
            accepted.append("next_round")
        if self.gate.may(Trigger.CUT_DONE):
            accepted.append("cut")
        if self.gate.may(Trigger.PLAY) and v.round is not None:
            play = allowed() if allowed is not None else allowed_commands(v.round.engine)
            accepted += [a for a in play if a in DEALER_PLAY]
        return sorted(accepted)

    def publish_states(self) -> list[Effect]:
        """The retained state documents whose content changed since they were last published (after inputs
        applied with ``states=False``). Part of the state like any input's effects: ``undo`` covers it."""
        self.fx.items = []
        self.publish()  # appends StateDocument effects only
        return self.fx.items

    def publish(self) -> None:
        """Retained state documents, each published only when its content changed."""
        v = self.table_view()
        rnd = v.round
        commands: list[list[str]] = []  # the engine's allowed commands, asked at most once per publish

        def allowed() -> list[str]:
            if not commands:
                assert rnd is not None  # asked only about the round in progress
                commands.append(allowed_commands(rnd.engine))
            return commands[0]

        jam: Any = v.faults.get("jam")  # a JamFault, a LinkFault (state.FAULT_TYPES)
        link: Any = v.faults.get("link_down")
        link_back = link is None or bool(link.restored)
        docs = {
            "table": self._table(v, allowed),
            "round": {
                **round_state(
                    rnd,
                    void=v.round_void,
                    contestable=bool(rnd and rnd.round_id in v.uninserted),
                    allowed=allowed,
                ),
                **self.jackpot.round_doc(rnd.round_id if rnd else None),
            },
            "lid": {
                "state": str(v.lid),
                "locked": bool(v.outputs.get("lid_lock", True)),
                "unlocked_by": v.lid_unlocked_by,
            },
            "jam": {
                "jammed": jam is not None,
                **({"location": jam.location} if jam else {}),
                "device_cleared": bool(jam and jam.device_cleared),
            },  # r.51: awaits the supervisor
            "shoe": {
                "shuffler": v.shuffler,
                "decks": v.decks,
                "cards_inside": v.inside,  # a count only: nothing reveals the cards inside
                "cards_out": v.out,
                "dealt_this_shoe": v.dealt_this_shoe,
                "shoe_no": v.shoe_no,
                "shuffling": bool(v.shuffling),
                # The link itself; a link fault stays in state/table "faults" until clear_link, even when back.
                "linked": v.device_known and link_back,
                "last_round_of_shoe": v.last_round is not None,
            },
        }
        jackpot = self.jackpot.state_doc()
        if jackpot is not None:
            docs["jackpot"] = jackpot
        if v.players_seated or "players" in self.published:  # issue 41: once a player was seated
            docs["players"] = self.players.document()
        for name, data in docs.items():
            # The JSON text is the cache key: immutable (the documents share live dicts such as the bets),
            # cheap to compare, and it proves the document is plain JSON.
            text = canonical(data)
            if self.published.get(name) != text:
                self.published[name] = text
                self.fx.items.append(StateDocument(_NAMES[name], text))
