"""The shoe cycle: discards in, shuffling, counts, cut and warning cards, the last round of the shoe, deck checks
(PT-2001 r.8-11, r.53-59)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from controller.effects import Rejected
from controller.table.base import seat_arg
from controller.table.concern import CountHandler, Handlers, LidFace, RoundsFace, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import TableState, Trigger
from controller.table.profile import WARNING_TOLERANCE_CARDS
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink
from controller.table.state import ShoeState
from drivers import events as ev
from drivers.events import LidState


class CountRouter(Protocol):
    """Which concern takes the shoe's count in a state (the core's tables, dispatch.py)."""

    def count_handler(self, state: TableState) -> CountHandler | None: ...


@dataclass
class CycleState:
    """Snapshot keys ``shoe``, ``inside``, ``out``."""

    shoe: ShoeState = field(default_factory=ShoeState)
    inside: int = 0  # cards the controller believes are inside the machine
    out: int = 0  # cards out of the machine (table + discard)


class ShoeCycle:
    """Owns the shoe and its counts (``CycleState``); ``rounds`` and ``players`` answer for the rounds and the
    bets, built after it (their providers are given here)."""

    name: ClassVar[str] = "shoe_cycle"

    def __init__(
        self,
        fx: EffectSink,
        gate: Gate,
        setup: SetupFace,
        lid: LidFace,
        rounds: Callable[[], RoundsFace],
        players: Callable[[], int],
        counts: CountRouter,
    ) -> None:
        self.fx, self.gate, self.setup, self.lid = fx, gate, setup, lid
        self._rounds, self._players, self.counts = rounds, players, counts
        self.s = CycleState()

    def handlers(self) -> Handlers:
        return Handlers(
            device={
                ev.CutCardOut: self.on_cut_card_out,
                ev.WarningCardOut: self.on_warning_card_out,
                ev.ShuffleStarted: self.on_shuffle_started,
                ev.ShuffleFinished: self.on_shuffle_finished,
                ev.CardsInside: self.on_cards_inside,
                ev.DiscardInserted: self.on_discard_inserted,
            },
            dealer={"cut": self.cut},
            counts={TableState.LOADING: self.loading_count, TableState.SHUFFLING: self.shuffle_count},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        s = self.s
        snap["shoe"], snap["inside"], snap["out"] = s.shoe.to_dict(), s.inside, s.out

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap)

    def count_reported(self, count: int, *, shuffled: bool = False) -> None:
        """The shoe's count of the cards inside: what it means depends on the state (the concerns' ``counts``)."""
        handler = self.counts.count_handler(self.gate.state)
        if handler is not None:
            handler(count, shuffled)
        else:
            self.unexpected_count(count)

    def loading_count(self, count: int, shuffled: bool) -> None:
        self.check_loaded(count)

    def shuffle_count(self, count: int, shuffled: bool) -> None:
        self.shuffled_count(count)

    @property
    def last_seq(self) -> int:
        return self.s.shoe.last_seq

    @property
    def first_round(self) -> bool:
        return self.s.shoe.first_round

    @property
    def shuffling(self) -> bool:
        return self.s.shoe.shuffling

    @property
    def last_round(self) -> str | None:
        return self.s.shoe.last_round

    @property
    def shoe(self) -> ShoeState:
        return self.s.shoe

    @property
    def inside(self) -> int:
        return self.s.inside

    @property
    def out(self) -> int:
        return self.s.out

    # ---- the counts, as the other concerns change them
    def card_out(self, shoe_seq: int) -> None:
        """A card with a fresh number left the machine."""
        self.shoe.last_seq = shoe_seq
        self.shoe.dealt += 1
        self.s.inside = max(0, self.s.inside - 1)
        self.s.out += 1

    def take_seq_restart(self) -> bool:
        """Read once: the shoe rebooted, its shoe_seq may start again at 1."""
        restart, self.shoe.seq_restart = self.shoe.seq_restart, False
        return restart

    def shoe_rebooted(self) -> None:
        self.shoe.seq_restart = True  # another boot of the shoe: its shoe_seq may start again at 1

    def burn_again(self) -> None:
        """PT-2001 r.10: the next round burns the shoe's burn again (a voided first round dealt nothing)."""
        self.shoe.first_round = True

    def round_started(self, round_id: str) -> None:
        self.shoe.first_round = False
        if self.shoe.last_round == "next":
            self.shoe.last_round = round_id  # r.11: the warning card came out just before: this is the last

    def last_round_is(self, round_id: str) -> None:
        self.shoe.last_round = round_id  # the bank's choice: this round closes the shoe (MO-2004 art.2.2.2)

    def new_session(self) -> None:
        self.s.inside, self.s.out = 0, 0

    def resynced(self, count: int) -> int:
        """The shoe's count after a fault or a restart; returns the count the table expected."""
        expected = self.s.inside
        self.s.inside = count
        if count < expected and self.shoe.last_seq:
            # The cards that left unseen took their shoe_seq numbers with them: the next card seen follows
            # them, not a gap (else the next round would be voided for this round's loss, issue 14 item 2).
            self.shoe.last_seq += expected - count
            self.shoe.dealt += expected - count
        return expected

    def closing(self, count: int, total: int) -> None:
        """Closing (PT-2001 r.55): the shoe's count once the cards out went back in."""
        self.s.inside, self.s.out = count, max(0, total - count)

    def lost(self, expected: int, count: int) -> None:
        self.s.out = max(0, self.s.out + expected - count)

    def restore(self, snap: dict[str, Any]) -> None:
        self.s = CycleState(shoe=ShoeState.from_dict(snap["shoe"]), inside=snap["inside"], out=snap["out"])

    def on_discard_inserted(self, e: ev.DiscardInserted) -> None:
        self.fx.record(RecordKind.DISCARD_INSERTED, count=e.count, state=self.gate.state)
        if self.lid.position != LidState.OPEN:
            self.fx.alert(
                "discard_lid_closed", "warning", "cards inserted while the lid is not open (PT-2001 r.59)"
            )
        self.s.inside += e.count
        if self.gate.state == TableState.LOADING:
            self.setup.count_packet()  # PT-2001 r.54: at least two packets
            return
        if e.count > self.out:
            # PT-2001 r.54: the cards are loaded once per session; more going in than came out were added
            self.fx.alert(
                "cards_added",
                "critical",
                f"{e.count} card(s) inserted but only {self.out} were out of the shoe: cards added after "
                "the loading (PT-2001 r.54-55)",
                inserted=e.count,
                out=self.out,
            )
        self.s.out = max(0, self.out - e.count)
        after_round = (TableState.SETTLED, TableState.CARDS_RETURNED)
        if self.gate.phase_state() in after_round:  # also during a fault that interrupted it
            # r.62: once inserted, the rounds' records are no longer contestable (r.61: carried ones too)
            rounds = self._rounds()
            if rounds.uninserted:
                self.fx.record(RecordKind.ROUNDS_FINAL, rounds=rounds.uninserted, cards=e.count)
                self.fx.event(
                    "shoe", procedure="cards_inserted", rounds=rounds.uninserted, rule="PT-2001 r.62"
                )
                rounds.inserted()
            if self.out:
                self.fx.alert("discard_count", "warning", f"{self.out} card(s) still out after the insertion")
            if self.gate.may(Trigger.CARDS_IN):
                self.gate.go(Trigger.CARDS_IN)

    def on_shuffle_started(self, e: ev.ShuffleStarted) -> None:
        self.shoe.shuffling = True
        if self.setup.shuffler == "batch":
            self.shoe.last_seq = 0  # every card back in: a batch shoe numbers its cards from 1 again
        self.fx.record(RecordKind.SHUFFLE_STARTED, state=self.gate.state)

    def on_shuffle_finished(self, e: ev.ShuffleFinished) -> None:
        self.shoe.shuffling = False
        self.fx.record(RecordKind.SHUFFLE_FINISHED, cards_inside=e.cards_inside, state=self.gate.state)
        self.count_reported(e.cards_inside, shuffled=True)

    def on_cards_inside(self, e: ev.CardsInside) -> None:
        self.fx.record(RecordKind.CARDS_INSIDE, count=e.count, expected=self.inside, state=self.gate.state)
        self.count_reported(e.count)

    def unexpected_count(self, count: int) -> None:
        """A count outside the procedures that use one (no concern declares a count handler for the state)."""
        if count != self.inside and self.gate.may(
            Trigger.JAM
        ):  # a session runs (the machine: active or a fault)
            self.fx.alert(
                "shoe_count", "warning", f"shoe reports {count} cards inside, expected {self.inside}"
            )
            self.s.inside = count

    def shuffled_count(self, count: int) -> None:
        """Batch shoe: the reshuffle after the last round of the shoe is done; a new shoe begins (r.8, r.11)."""
        tp = self.setup.tp
        if count != tp.total_cards:
            self.fx.alert(
                "shoe_count", "warning", f"{count} cards after the shuffle, expected {tp.total_cards}"
            )
        self.s.inside, self.s.out = count, tp.total_cards - count
        self.shoe.update(no=self.shoe.no + 1, dealt=0, last_seq=0, first_round=True, last_round=None)
        self.gate.go(Trigger.SHUFFLED)
        self._maybe_skip_cut()

    def check_loaded(self, count: int) -> None:
        """PT-2001 r.53-54: loaded once, in at least two packets, with the device counting decks x 52."""
        tp = self.setup.tp
        problems = []
        if tp.continuous and self.setup.session.packets < 2:
            problems.append(
                f"loaded in {self.setup.session.packets} packet(s), at least two required (PT-2001 r.54)"
            )
        if count != tp.total_cards:
            problems.append(
                f"{count} cards inside, expected {tp.decks} decks x 52 = {tp.total_cards} (PT-2001 r.53)"
            )
        if problems:
            self.fx.alert(
                "loading", "critical", "; ".join(problems), count=count, packets=self.setup.session.packets
            )
            return
        self.s.inside, self.s.out = count, 0
        self.shoe.update(no=1, dealt=0, first_round=True, last_round=None, cutter=None)
        self.fx.record(
            RecordKind.SESSION_LOADED,
            session_id=self.setup.session.id,
            cards=count,
            packets=self.setup.session.packets,
        )
        pinned = self.setup.session.pinned if isinstance(self.setup.session.pinned, dict) else {}
        currency = pinned.get("currency")  # the configured currency, pinned at open_table (issue 36)
        self.fx.event("session", action="opened", session_id=self.setup.session.id, profile=tp.name,
                      **({"currency": currency} if isinstance(currency, str) else {}))  # fmt: skip
        self.gate.go(Trigger.LOADED_CONTINUOUS if tp.continuous else Trigger.LOADED)
        self._maybe_skip_cut()

    def on_cut_card_out(self, e: ev.CutCardOut) -> None:
        self.fx.record(RecordKind.CUT_CARD_OUT, dealt=self.shoe.dealt)
        if self.setup.tp is None or self.setup.tp.continuous:
            # PT-2001 r.52: no cut card with a shuffler; r.56: no "last round of the shoe" with a continuous one
            self.fx.alert("cut_card", "warning", "cut card from a continuous shuffler (PT-2001 r.52, r.56)")
            return
        self._last_round_of_shoe("cut card")

    def on_warning_card_out(self, e: ev.WarningCardOut) -> None:
        tp = self.setup.tp
        if tp is None or tp.warning_from_end == 0:
            self.fx.record(RecordKind.WARNING_CARD_OUT, dealt=self.shoe.dealt)
            self.fx.alert(
                "warning_card", "warning", "warning card from a continuous shuffler (PT-2001 r.52, r.56)"
            )
            return
        from_end = tp.total_cards - self.shoe.dealt
        players = self._players()
        if tp.warning_at_least:
            valid = from_end >= tp.warning_from_end
            expected = f"among the last {tp.warning_from_end} cards or more (MO-2004 art.2.1.1)"
        else:
            single = players == 1 and tp.warning_single_player_middle
            target = tp.total_cards // 2 if single else tp.warning_from_end
            valid = abs(from_end - target) <= WARNING_TOLERANCE_CARDS
            expected = f"near card {target} from the end (PT-2001 r.9, {players} player(s))"
        self.fx.record(
            RecordKind.WARNING_CARD_OUT, position_from_end=from_end, valid=valid, expected=expected
        )
        self.fx.event(
            "shoe", procedure="warning_card", position_from_end=from_end, valid=valid, rule="PT-2001 r.9"
        )
        if not valid:
            self.fx.alert(
                "warning_card_position", "warning", f"warning card {from_end} from the end; {expected}"
            )
        self._last_round_of_shoe("warning card")

    def _last_round_of_shoe(self, why: str) -> None:
        """PT-2001 r.11: the round in progress is the last; just before a round, that one is still played."""
        if self.shoe.last_round is not None:
            return
        rounds = self._rounds()
        self.shoe.last_round = rounds.current_round_id() if rounds.round_active() else "next"
        self.fx.event(
            "shoe", procedure="last_round", reason=why, round_id=self.shoe.last_round, rule="PT-2001 r.11"
        )

    def _maybe_skip_cut(self) -> None:
        if self.setup.tp.cut_card == "none" and self.gate.may(Trigger.CUT_DONE):
            self.fx.record(RecordKind.CUT, by="none", shoe=self.shoe.no)
            self.gate.go(Trigger.CUT_DONE)

    def cut(self, args: dict[str, Any]) -> None:
        """PT-2001 r.8: the lowest occupied seat cuts; on later shoes the right passes seat by seat; if nobody
        wants to, the inspector. MO-2004 art.2.1.1: any player, or the dealer."""
        self.gate.allow(Trigger.CUT_DONE, "cut")
        if args.get("inspector") or args.get("dealer"):
            by: int | str = "inspector" if args.get("inspector") else "dealer"
            if by == "dealer" and self.setup.tp.cut_card != "any_player_or_dealer":
                raise Rejected(
                    "the dealer does not cut under this profile: a player or the inspector (PT-2001 r.8)"
                )
        else:
            by = seat_arg(args, self.setup.tp.seats)
            prev = self.shoe.cutter
            if self.setup.tp.cut_card == "lowest_seat" and prev is not None and self._rounds().last_seats:
                # r.8: after an inspector's cut "the next shoe proceeds as at the start of play": the lowest
                # occupied seat again; otherwise the right passes to the next occupied seat after the cutter.
                later = [s for s in self._rounds().last_seats if isinstance(prev, int) and s > prev]
                expected = later[0] if later else self._rounds().last_seats[0]
                if by != expected:
                    raise Rejected(
                        f"seat {expected} has the right to cut this shoe, not seat {by} (PT-2001 r.8)"
                    )
        self.shoe.cutter = by
        self.fx.record(RecordKind.CUT, by=by, shoe=self.shoe.no)
        self.fx.event("shoe", procedure="cut", by=by, shoe=self.shoe.no, rule="PT-2001 r.8")
        self.gate.go(Trigger.CUT_DONE)
