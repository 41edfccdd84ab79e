"""The shoe cycle: discards in, shuffling, counts, cut and warning cards, the last round of the shoe, deck checks
(PT-2001 r.8-11, r.53-59)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.effects import Rejected
from controller.table import machine as m
from controller.table.base import CARD_CODES, CoreBase, _card_valid
from controller.table.profile import WARNING_TOLERANCE_CARDS
from controller.table.state import DeckCheck
from drivers import events as ev


class ShoeCycle(CoreBase):
    def _on_DiscardInserted(self, e: ev.DiscardInserted) -> None:
        self._record("discard_inserted", count=e.count, state=self.state)
        if self.lid.state != "open":
            self._alert(
                "discard_lid_closed", "warning", "cards inserted while the lid is not open (PT-2001 r.59)"
            )
        self.inside += e.count
        if self.state == "loading":
            self.session.packets += 1  # PT-2001 r.54: at least two packets
            return
        if e.count > self.out:
            # PT-2001 r.54: the cards are loaded once per session; more going in than came out were added
            self._alert(
                "cards_added",
                "critical",
                f"{e.count} card(s) inserted but only {self.out} were out of the shoe: cards added after "
                "the loading (PT-2001 r.54-55)",
                inserted=e.count,
                out=self.out,
            )
        self.out = max(0, self.out - e.count)
        after_round = ("settled", "cards_returned")
        if self._phase_state() in after_round:  # also during a fault that interrupted it
            # r.62: once inserted, the rounds' records are no longer contestable (r.61: carried ones too)
            if self.uninserted:
                self._record("rounds_final", rounds=self.uninserted, cards=e.count)
                self._event("shoe", procedure="cards_inserted", rounds=self.uninserted, rule="PT-2001 r.62")
                self.uninserted = []
            if self.out:
                self._alert("discard_count", "warning", f"{self.out} card(s) still out after the insertion")
            if self.may_cards_in():
                self._go("cards_in")

    def _on_ShuffleStarted(self, e: ev.ShuffleStarted) -> None:
        self.shoe.shuffling = True
        if self.shuffler == "batch":
            self.shoe.last_seq = 0  # every card back in: a batch shoe numbers its cards from 1 again
        self._record("shuffle_started", state=self.state)

    def _on_ShuffleFinished(self, e: ev.ShuffleFinished) -> None:
        self.shoe.shuffling = False
        self._record("shuffle_finished", cards_inside=e.cards_inside, state=self.state)
        self._count_report(e.cards_inside, shuffled=True)

    def _on_CardsInside(self, e: ev.CardsInside) -> None:
        self._record("cards_inside", count=e.count, expected=self.inside, state=self.state)
        self._count_report(e.count)

    def _count_report(self, count: int, *, shuffled: bool = False) -> None:
        """The shoe's count of the cards inside: what it means depends on the state (COUNT_REPORTS)."""
        handler = COUNT_REPORTS.get(self.state)
        if handler is not None:
            handler(self, count, shuffled)
        elif count != self.inside and self.may_jam():  # a session runs (the machine: active or a fault)
            self._alert("shoe_count", "warning", f"shoe reports {count} cards inside, expected {self.inside}")
            self.inside = count

    def _shuffled_count(self, count: int) -> None:
        """Batch shoe: the reshuffle after the last round of the shoe is done; a new shoe begins (r.8, r.11)."""
        tp = self.tp
        if count != tp.total_cards:
            self._alert(
                "shoe_count", "warning", f"{count} cards after the shuffle, expected {tp.total_cards}"
            )
        self.inside, self.out = count, tp.total_cards - count
        self.shoe.update(no=self.shoe.no + 1, dealt=0, last_seq=0, first_round=True, last_round=None)
        self._go("shuffled")
        self._maybe_skip_cut()

    def _check_loaded(self, count: int) -> None:
        """PT-2001 r.53-54: loaded once, in at least two packets, with the device counting decks x 52."""
        tp = self.tp
        problems = []
        if tp.continuous and self.session.packets < 2:
            problems.append(
                f"loaded in {self.session.packets} packet(s), at least two required (PT-2001 r.54)"
            )
        if count != tp.total_cards:
            problems.append(
                f"{count} cards inside, expected {tp.decks} decks x 52 = {tp.total_cards} (PT-2001 r.53)"
            )
        if problems:
            self._alert("loading", "critical", "; ".join(problems), count=count, packets=self.session.packets)
            return
        self.inside, self.out = count, 0
        self.shoe.update(no=1, dealt=0, first_round=True, last_round=None, cutter=None)
        self._record("session_loaded", session_id=self.session.id, cards=count, packets=self.session.packets)
        self._event("session", action="opened", session_id=self.session.id, profile=tp.name)
        self._go("loaded_continuous" if tp.continuous else "loaded")
        self._maybe_skip_cut()

    def _on_CutCardOut(self, e: ev.CutCardOut) -> None:
        self._record("cut_card_out", dealt=self.shoe.dealt)
        if self.tp is None or self.tp.continuous:
            # PT-2001 r.52: no cut card with a shuffler; r.56: no "last round of the shoe" with a continuous one
            self._alert("cut_card", "warning", "cut card from a continuous shuffler (PT-2001 r.52, r.56)")
            return
        self._last_round_of_shoe("cut card")

    def _on_WarningCardOut(self, e: ev.WarningCardOut) -> None:
        tp = self.tp
        if tp is None or tp.warning_from_end == 0:
            self._record("warning_card_out", dealt=self.shoe.dealt)
            self._alert(
                "warning_card", "warning", "warning card from a continuous shuffler (PT-2001 r.52, r.56)"
            )
            return
        from_end = tp.total_cards - self.shoe.dealt
        players = len(self.round.bets) if self.round else len(self.bets) or len(self.last_seats)
        if tp.warning_at_least:
            valid = from_end >= tp.warning_from_end
            expected = f"among the last {tp.warning_from_end} cards or more (MO-2004 art.2.1.1)"
        else:
            single = players == 1 and tp.warning_single_player_middle
            target = tp.total_cards // 2 if single else tp.warning_from_end
            valid = abs(from_end - target) <= WARNING_TOLERANCE_CARDS
            expected = f"near card {target} from the end (PT-2001 r.9, {players} player(s))"
        self._record("warning_card_out", position_from_end=from_end, valid=valid, expected=expected)
        self._event(
            "shoe", procedure="warning_card", position_from_end=from_end, valid=valid, rule="PT-2001 r.9"
        )
        if not valid:
            self._alert(
                "warning_card_position", "warning", f"warning card {from_end} from the end; {expected}"
            )
        self._last_round_of_shoe("warning card")

    def _last_round_of_shoe(self, why: str) -> None:
        """PT-2001 r.11: the round in progress is the last; just before a round, that one is still played."""
        if self.shoe.last_round is not None:
            return
        self.shoe.last_round = self.round.round_id if self._round_active() else "next"
        self._event(
            "shoe", procedure="last_round", reason=why, round_id=self.shoe.last_round, rule="PT-2001 r.11"
        )

    def _maybe_skip_cut(self) -> None:
        if self.tp.cut_card == "none" and self.may_cut_done():
            self._record("cut", by="none", shoe=self.shoe.no)
            self._go("cut_done")

    def _cut(self, args: dict[str, Any]) -> None:
        """PT-2001 r.8: the lowest occupied seat cuts; on later shoes the right passes seat by seat; if nobody
        wants to, the inspector. MO-2004 art.2.1.1: any player, or the dealer."""
        self._allow("cut_done", "cut")
        if args.get("inspector") or args.get("dealer"):
            by: int | str = "inspector" if args.get("inspector") else "dealer"
            if by == "dealer" and self.tp.cut_card != "any_player_or_dealer":
                raise Rejected(
                    "the dealer does not cut under this profile: a player or the inspector (PT-2001 r.8)"
                )
        else:
            by = self._seat(args)
            prev = self.shoe.cutter
            if self.tp.cut_card == "lowest_seat" and prev is not None and self.last_seats:
                # r.8: after an inspector's cut "the next shoe proceeds as at the start of play": the lowest
                # occupied seat again; otherwise the right passes to the next occupied seat after the cutter.
                later = [s for s in self.last_seats if isinstance(prev, int) and s > prev]
                expected = later[0] if later else self.last_seats[0]
                if by != expected:
                    raise Rejected(
                        f"seat {expected} has the right to cut this shoe, not seat {by} (PT-2001 r.8)"
                    )
        self.shoe.cutter = by
        self._record("cut", by=by, shoe=self.shoe.no)
        self._event("shoe", procedure="cut", by=by, shoe=self.shoe.no, rule="PT-2001 r.8")
        self._go("cut_done")

    def _closing_count(self, count: int, *, returned: bool) -> None:
        """Closing (PT-2001 r.55): the count once the cards out went back in. ``returned``: the shuffle that
        follows their return (the lid cycle of a continuous shuffler, the batch shoe's reshuffle) is done, so
        cards still missing are a shortfall: flagged, and the inventory names them."""
        self.inside, self.out = count, max(0, self.tp.total_cards - count)
        if returned and self.out > 0 and self.lid.unlock is None and self.lid.state != "open":
            self._alert(
                "deck_count",
                "critical",
                f"{self.out} card(s) short of {self.tp.total_cards} after every card went back in "
                "(PT-2001 r.55)",
                count=count,
                expected=self.tp.total_cards,
            )
            self._record("deck_shortfall", count=count, expected=self.tp.total_cards)
            self._cmd(ev.RunDeckCheck())
            return
        self._maybe_deck_check()

    def _maybe_deck_check(self) -> None:
        """The inventory needs every card inside, the lid shut and the shuffle done (PT-2001 r.55)."""
        if (
            self.state == "closing"
            and self.out == 0
            and not self.shoe.shuffling
            and not self._lid_is_open()
            and self.lid.unlock is None
        ):
            self._cmd(ev.RunDeckCheck())

    def _on_DeckCheckResult(self, e: ev.DeckCheckResult) -> None:
        """PT-2001 r.55: every deck complete: count and per-card inventory."""
        tp = self.tp
        if tp is None:  # no session has loaded a profile: nothing to check the inventory against
            self._record("deck_check_ignored", reason="no rule profile loaded", state=self.state)
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
        self.deck_check = check
        self._record("deck_check", state=self.state, **check.to_dict())
        self._event("deck_check", decks=decks, **check.to_dict())
        if self.state != "closing":
            return
        if ok:
            if self.tp.continuous:
                # cards taken out with the chief inspector present (r.55)
                self._grant_opening("closing", unlock=True)
            self._event("session", action="closed", session_id=self.session.id)
            self._go("deck_ok")
        else:
            self._alert(
                "deck_check",
                "critical",
                "deck check failed: missing, extra or duplicated cards; reopening blocked (PT-2001 r.55)",
                **check.to_dict(),
            )
            self._go("deck_bad")

    def _sv_ack_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self._allow("ack_deck_check", "ack_deck_check")
        self._record(
            "deck_check_acknowledged", user=user, at=self._ts(), deck_check=self.deck_check
        )  # to_json
        self._go("ack_deck_check")

    def _sv_run_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self._allow("run_deck_check", "run_deck_check")
        self._cmd(ev.RunDeckCheck())


CountReport = Callable[[ShoeCycle, int, bool], None]  # (core, count, after a shuffle)

# The states in which a count from the shoe is part of a procedure; in any other, a count that differs from the
# table's is a warning (PT-2001 r.53-55: loading, the shoe's reshuffle, the resync after a fault, the closing).
COUNT_REPORTS: dict[str, CountReport] = {
    "loading": lambda core, count, _shuffled: core._check_loaded(count),
    "shuffling": lambda core, count, _shuffled: core._shuffled_count(count),
    "resync": lambda core, count, _shuffled: core._resync(count),
    "closing": lambda core, count, shuffled: core._closing_count(count, returned=shuffled),
}
if set(COUNT_REPORTS) - set(m.STATES):  # a renamed state would silently lose its procedure: checked at import
    raise RuntimeError(
        f"shoe_cycle.py: COUNT_REPORTS names no state {sorted(set(COUNT_REPORTS) - set(m.STATES))}"
    )
