"""The retained state documents and the table view (docs/mqtt.md): published only when their text changed."""

from __future__ import annotations

from typing import Any

from controller.actions import DEALER_PLAY
from controller.canonical import canonical
from controller.effects import DocumentName, StateDocument
from controller.table import machine as m
from controller.table.base import CoreBase
from controller.table.reporting import (
    allowed_commands,
    hole_card_hidden,
    round_state,
)


class StateDocuments(CoreBase):
    def view(self) -> dict[str, Any]:
        """The table state as published (retained) and shown on the pit terminal."""
        rnd = self.round
        return {
            "state": self.state,
            "session_id": self.session.id,
            "profile": self.profile_name,
            "shuffler": self.shuffler,
            "round_id": rnd.round_id if rnd else None,
            "round_active": self.state in m.ROUND_ACTIVE
            or (self.state in m.FAULT_STATES and self._round_active()),
            "bets": {seat: bet.to_dict() for seat, bet in self.bets.items()},
            "contestable_rounds": list(self.uninserted),  # r.62: final but contestable until inserted
            "carried_rounds": [r for r in self.uninserted if not rnd or r != rnd.round_id],  # r.61
            "faults": sorted(self.faults),
            "resume_to": self.resume_to,
            "lid": self.lid.state,
            "lid_unlocked_by": self.lid.unlock,
            "cards_inside": self.inside,
            "cards_out": self.out,
            "last_shoe_seq": self.shoe.last_seq,
            "last_round_of_shoe": self.shoe.last_round is not None,
            "awaiting_card_replacement": self.pending_replacement is not None,
            "outputs": dict(self.outputs),
            # the open session's bet limits in minor units (the pit terminal's chips stay within them)
            "limits": {"min_bet": self.tp.min_bet, "max_bet": self.tp.max_bet} if self.tp else None,
            # the dealer inputs the core accepts now: the pit terminal enables exactly these
            "dealer_inputs": self.dealer_inputs(),
            # the dealer on duty (issue 29), only while someone is signed in
            **({"dealer": self.dealer_on_duty} if self.dealer_on_duty is not None else {}),
        }

    def dealer_inputs(self) -> list[str]:
        """The dealer commands (controller/actions.py) the core would accept now, from the machine's
        ``may_<trigger>()`` answers and, during play, the rules engine's allowed actions. Arguments (which seat,
        how much) are still checked when the input comes; everything else is decided here, once."""
        if self._dealing_blocked() is not None:
            return []
        allowed = []
        if self.may_place_bet():
            allowed.append("place_bet")
        if self.bets and self.may_clear_bet():
            allowed.append("clear_bet")
        if self.bets and self.may_close_bets():
            allowed.append("no_more_bets")
        if self.may_jackpot_chip() and any(int(seat) not in self.chips for seat in self.bets):
            jackpot = self.jackpot.state_doc() or {}  # manual mode only (r.41b; automatic: sensed, r.41a)
            if jackpot.get("mode") == "manual" and jackpot.get("playable"):
                allowed.append("jackpot_chip")
        if self.may_next_round() and self.lid.state != "open":  # the lid is closed first (r.59-60)
            allowed.append("next_round")
        if self.may_cut_done():
            allowed.append("cut")
        if self.may_play() and self.round is not None:
            allowed += [a for a in allowed_commands(self.round.engine) if a in DEALER_PLAY]
        return sorted(allowed)

    def publish_states(self) -> list[StateDocument]:
        """The retained state documents whose content changed since they were last published (after inputs
        applied with ``states=False``). Part of the state like any input's effects: ``undo`` covers it."""
        self._fx = []
        self._state_documents()  # appends StateDocument effects only
        return self._fx

    def _state_documents(self) -> None:
        """Retained state documents, each published only when its content changed."""
        rnd = self.round
        jam = self.faults.get("jam")
        link = self.faults.get("link_down")
        link_back = link is None or bool(link.restored)
        docs = {
            "table": self.view(),
            "round": {
                **round_state(
                    rnd, void=self.round_void, contestable=bool(rnd and rnd.round_id in self.uninserted)
                ),
                **self.jackpot.round_doc(rnd.round_id if rnd else None),
            },
            "lid": {
                "state": self.lid.state,
                "locked": bool(self.outputs.get("lid_lock", True)),
                "unlocked_by": self.lid.unlock,
            },
            "jam": {
                "jammed": jam is not None,
                **({"location": jam.location} if jam else {}),
                "device_cleared": bool(jam and jam.device_cleared),
            },  # r.51: awaits the supervisor
            "shoe": {
                "shuffler": self.shuffler,
                "decks": self.rules_profile.decks if self.rules_profile is not None else None,
                "cards_inside": self.inside,  # a count only: nothing reveals the cards inside
                "cards_out": self.out,
                "dealt_this_shoe": self.shoe.dealt,
                "shoe_no": self.shoe.no,
                "shuffling": bool(self.shoe.shuffling),
                # The link itself; a link fault stays in state/table "faults" until clear_link, even when back.
                "linked": self.device.known and link_back,
                "last_round_of_shoe": self.shoe.last_round is not None,
            },
        }
        jackpot = self.jackpot.state_doc()
        if jackpot is not None:
            docs["jackpot"] = jackpot
        for name, data in docs.items():
            # The JSON text is the cache key: immutable (the documents share live dicts such as the bets),
            # cheap to compare, and it proves the document is plain JSON.
            text = canonical(data)
            if self._published.get(name) != text:
                self._published[name] = text
                self._fx.append(StateDocument(DocumentName(name), text))

    def _hole_card_event(self) -> None:
        """The dealer's hole card turned over: one events/round message, the first input it is seen after."""
        rnd = self.round
        engine = rnd.engine if rnd is not None else None
        if (
            engine is not None
            and engine.profile.hole_card
            and len(engine.dealer) >= 2
            and not hole_card_hidden(engine)
            and self.hole_revealed != rnd.round_id
        ):
            self.hole_revealed = rnd.round_id  # the dealer turned the hole card over (PT-2001 r.17)
            self._event(
                "round", round_id=rnd.round_id, phase="hole_card_revealed", card=str(engine.dealer[1])
            )
