"""The physical shoe, without I/O: cards inside/out, lid, shuffle, jam, batch cut/warning cards.

Every operation returns the device events it causes (device_time_ms is stamped by the device when sent).
Refusals are raised as ``Refused(code, text)``; the device turns them into a COMMAND_RESULT or a control
error.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass

from drivers import events as ev
from drivers.protocol.messages import ErrorCode
from tablebench.emulator.scenario import ALL_CODES, Fault, Scenario, check_code


class Refused(Exception):
    def __init__(self, code: ErrorCode, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


@dataclass(slots=True)
class DrawOutcome:
    events: list[ev.DeviceEvent]
    drawn: int
    fired: list[Fault]  # silence/unplug faults due after these cards (the device acts on them)


class ShoeModel:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed) if sc.seed is not None else random.SystemRandom()
        cards = Counter({c: sc.decks for c in ALL_CODES})
        cards.subtract(sc.missing)
        cards.update(sc.extra)
        inside = sorted(cards.elements())
        self.queued: deque[str] = deque()
        for code in sc.order:  # validated by the scenario loader
            inside.remove(code)
            self.queued.append(code)
        self.inside: list[str] = inside
        self.out: list[str] = []  # cards out of the machine (in play or in the discard), oldest first
        # Every card that came out, in order (bench reconciliation); never the cards still inside.
        self.dealt: list[dict[str, object]] = []
        if sc.start_empty:  # the decks lie beside the machine, to be loaded through the window (r.53-54)
            self.rng.shuffle(inside)
            self.out, self.inside = inside, []
        self.drawn_total = 0  # cards out since start: the "card N" of faults
        self.shoe_seq = 0
        self.lid = ev.LidState.LOCKED if sc.continuous else ev.LidState.CLOSED
        self.lid_open = False  # physically open (normally or forced)
        self.locked = sc.continuous
        self.shuffling = False
        self.shuffle_token = 0
        self.jam: ev.JamLocation | None = None
        self.shuffle_interrupted = False  # a jam stopped a shuffle: it ends when the jam is cleared
        self.warning_light = False
        self.warning_out = False
        self.cut_out = False
        self.next_unreadable: bool | None = None  # damaged flag for the next card (control op)
        self.next_face_up = False
        self._fired: set[int] = set()
        if not sc.continuous:
            self.rng.shuffle(self.inside)

    # ---- queries ----------------------------------------------------------------------------------------

    @property
    def cards_inside(self) -> int:
        return len(self.inside) + len(self.queued)

    def state(self) -> dict[str, object]:
        """What an operator can see; never the order of the cards inside."""
        return {
            "kind": self.sc.kind,
            "cards_inside": self.cards_inside,
            "cards_out": len(self.out),
            "cards_drawn": self.drawn_total,
            "shoe_seq": self.shoe_seq,
            "queued": len(self.queued),
            "lid": str(self.lid),
            "lid_open": self.lid_open,
            "locked": self.locked,
            "shuffling": self.shuffling,
            "jam": str(self.jam) if self.jam else None,
            "warning_light": self.warning_light,
            "warning_card_out": self.warning_out,
            "cut_card_out": self.cut_out,
        }

    # ---- cards ------------------------------------------------------------------------------------------

    def queue(self, codes: list[str]) -> None:
        """Script the next cards out; each is taken from the cards inside (all or nothing)."""
        _take_all(codes, self.inside, "no {code} left inside the machine")
        self.queued.extend(codes)

    def _due(self, n: int, kinds: tuple[str, ...]) -> list[Fault]:
        due = []
        for i, f in enumerate(self.sc.faults):
            if f.at_card == n and f.kind in kinds and i not in self._fired:
                self._fired.add(i)
                due.append(f)
        return due

    def draw(self, count: int) -> DrawOutcome:
        """The dealer draws ``count`` cards (or Dispense). Stops early at a jam or the end of the cards."""
        if self.jam is not None:
            raise Refused(ErrorCode.JAMMED, f"jammed at {self.jam}: clear the jam first (PT-2001 r.51)")
        if self.shuffling and not self.sc.continuous:
            raise Refused(ErrorCode.SHUFFLING, "shuffling: the shoe is not ready")
        out = DrawOutcome([], 0, [])
        for _ in range(count):
            n = self.drawn_total + 1
            for f in self._due(n, ("jam",)):
                self.jam = f.location
                out.events.append(ev.Jammed(f.location))
                return out
            for _f in self._due(n, ("lid_forced",)):
                out.events.extend(self._force_lid())
            if not self.sc.continuous:
                out.events.extend(self._special_cards())
            if self.cards_inside == 0:
                if not out.drawn:
                    raise Refused(ErrorCode.EMPTY, "no cards inside the machine")
                return out
            code = self.queued.popleft() if self.queued else self._take_unscripted()
            self.out.append(code)
            self.drawn_total = n
            self.shoe_seq += 1
            unreadable = self._due(n, ("unreadable",))
            face_up = bool(self._due(n, ("face_up",))) or self.next_face_up
            self.next_face_up = False
            if unreadable or self.next_unreadable is not None:
                damaged = unreadable[0].damaged if unreadable else bool(self.next_unreadable)
                self.next_unreadable = None
                out.events.append(ev.CardUnreadable(self.shoe_seq, damaged=damaged))
                self.dealt.append({"n": n, "shoe_seq": self.shoe_seq, "code": code, "unreadable": True})
            else:
                out.events.append(ev.CardOut(code[0], code[1], self.shoe_seq, face_up=face_up))
                self.dealt.append({"n": n, "shoe_seq": self.shoe_seq, "code": code, "face_up": face_up})
            out.drawn += 1
            out.fired.extend(self._due(n, ("silence", "unplug")))
        return out

    def _take_unscripted(self) -> str:
        if self.sc.continuous:
            return self.inside.pop(self.rng.randrange(len(self.inside)))
        return self.inside.pop(0)  # batch: the shuffled stack, top first

    def _special_cards(self) -> list[ev.DeviceEvent]:
        """Batch shoe: the warning card (PT-2001 r.9/r.11) and the cut card lie in front of a given card."""
        evs: list[ev.DeviceEvent] = []
        left = self.cards_inside
        if not self.warning_out and left <= self.sc.warning_from_end:
            self.warning_out = True
            evs.append(ev.WarningCardOut())
        if not self.cut_out and left <= self.sc.cut_from_end:
            self.cut_out = True
            evs.append(ev.CutCardOut())
        return evs

    def insert(self, count: int | None = None, cards: list[str] | None = None) -> list[ev.DeviceEvent]:
        """Discards into the window: only while the lid is open (PT-2001 r.59; else they wait, r.61)."""
        if not self.sc.continuous:
            raise Refused(ErrorCode.UNSUPPORTED, "a batch shoe has no discard window")
        if not self.lid_open:
            raise Refused(
                ErrorCode.LID_NOT_CLOSED, "lid is closed: the cards stay in the discard (PT-2001 r.61)"
            )
        if cards is not None:
            _take_all(cards, self.out, "{code} is not among the cards out")
            self.inside.extend(cards)
            n = len(cards)
        else:
            n = len(self.out) if count is None else count
            if not 0 <= n <= len(self.out):
                raise Refused(ErrorCode.BAD_ARGUMENT, f"count {n}: only {len(self.out)} cards are out")
            self.inside.extend(self.out[:n])
            del self.out[:n]
        return [ev.DiscardInserted(n)] if n else []

    # ---- lid, shuffle, jam ------------------------------------------------------------------------------

    def _no_lid(self) -> None:
        if not self.sc.continuous:
            raise Refused(ErrorCode.UNSUPPORTED, "a batch shoe has no lid")

    def lock(self) -> list[ev.DeviceEvent]:
        self._no_lid()
        if self.lid_open:
            raise Refused(ErrorCode.LID_OPEN, "the lid is open: close it before locking")
        if self.locked:
            return []
        self.locked = True
        self.lid = ev.LidState.LOCKED
        return [ev.LidChanged(self.lid)]

    def unlock(self) -> list[ev.DeviceEvent]:
        self._no_lid()
        if self.shuffling:
            raise Refused(ErrorCode.SHUFFLING, "the lid stays locked while shuffling")
        # Jam: only once the warning light is on, i.e. the controller has signalled the jam and called the
        # chief inspector, who alone opens the lid to clear it (PT-2001 r.51).
        if self.jam is not None and not self.warning_light:
            raise Refused(
                ErrorCode.WARNING_LIGHT_OFF, "jammed: turn the warning light on first (PT-2001 r.51)"
            )
        if not self.locked:
            return []
        self.locked = False
        if not self.lid_open:
            self.lid = ev.LidState.UNLOCKED
            return [ev.LidChanged(self.lid)]
        return []

    def open_lid(self) -> list[ev.DeviceEvent]:
        """Automatic opening (PT-2001 r.60); never while jammed (inspector opens it, r.51) or shuffling."""
        self._no_lid()
        if self.jam is not None:
            raise Refused(
                ErrorCode.JAMMED, "jammed: no automatic opening; UnlockLid for the inspector (r.51)"
            )
        if self.shuffling:
            raise Refused(ErrorCode.SHUFFLING, "shuffling: the lid cannot open")
        if self.lid_open:
            return []
        self.lid_open, self.locked = True, False
        self.lid = ev.LidState.OPEN
        return [ev.LidChanged(self.lid)]

    def close_lid(self) -> list[ev.DeviceEvent]:
        """The dealer closes the lid; shuffling starts automatically (PT-2001 r.60) unless jammed."""
        self._no_lid()
        if not self.lid_open:
            raise Refused(ErrorCode.BAD_ARGUMENT, "the lid is already closed")
        self.lid_open = False
        self.lid = ev.LidState.CLOSED
        evs: list[ev.DeviceEvent] = [ev.LidChanged(self.lid)]
        if self.jam is None:
            evs += self.start_shuffle()
        return evs

    def _force_lid(self) -> list[ev.DeviceEvent]:
        self.lid_open, self.locked = True, False
        if self.shuffling:  # the mechanism stops
            self.shuffling = False
            self.shuffle_token += 1
        self.lid = ev.LidState.FORCED_OPEN
        return [ev.LidChanged(self.lid)]

    def force_lid(self) -> list[ev.DeviceEvent]:
        self._no_lid()
        return self._force_lid()

    def start_shuffle(self) -> list[ev.DeviceEvent]:
        if self.jam is not None:
            raise Refused(ErrorCode.JAMMED, f"jammed at {self.jam}")
        if self.shuffling:
            return []
        if self.lid_open:
            raise Refused(ErrorCode.LID_OPEN, "the lid is open: close it to shuffle")
        self.shuffling = True
        self.shuffle_token += 1
        evs: list[ev.DeviceEvent] = [ev.ShuffleStarted()]
        if self.sc.continuous:
            if not self.locked:
                self.locked = True
                self.lid = ev.LidState.LOCKED
                evs.append(ev.LidChanged(self.lid))
        else:  # batch: every card goes back and the shoe restarts
            self.inside.extend(self.out)
            self.out.clear()
            self.rng.shuffle(self.inside)
            self.shoe_seq = 0
            self.warning_out = self.cut_out = False
        return evs

    def finish_shuffle(self, token: int) -> list[ev.DeviceEvent]:
        if not self.shuffling or token != self.shuffle_token:
            return []
        self.shuffling = False
        return [ev.ShuffleFinished(self.cards_inside)]

    def jam_now(self, location: ev.JamLocation) -> list[ev.DeviceEvent]:
        self.jam = location
        if self.shuffling:  # the mechanism stops; it finishes the shuffle once the jam is cleared
            self.shuffling = False
            self.shuffle_token += 1
            self.shuffle_interrupted = True
        return [ev.Jammed(location)]

    def clear_jam(self) -> list[ev.DeviceEvent]:
        """The technician clears it by hand: only with the lid unlocked or open (PT-2001 r.51)."""
        if self.jam is None:
            raise Refused(ErrorCode.BAD_ARGUMENT, "not jammed")
        if self.sc.continuous and self.locked and not self.lid_open:
            raise Refused(ErrorCode.BAD_ARGUMENT, "the lid is locked: UnlockLid before clearing the jam")
        self.jam = None
        # a shuffle that started reports its end (the table waits for it): the freed shuffler finishes it
        if self.shuffle_interrupted:
            self.shuffle_interrupted = False
            return [ev.JamCleared(), ev.ShuffleFinished(self.cards_inside)]
        return [ev.JamCleared()]

    # ---- reports ----------------------------------------------------------------------------------------

    def counts(self) -> list[ev.DeviceEvent]:
        return [ev.CardsInside(self.cards_inside)]

    def deck_check(self) -> list[ev.DeviceEvent]:
        """Inventory of the cards inside for the close-of-session check (PT-2001 r.55)."""
        if self.shuffling:
            raise Refused(ErrorCode.SHUFFLING, "shuffling: deck check after the shuffle")
        counts = Counter(self.inside) + Counter(self.queued)
        return [ev.DeckCheckResult(dict(sorted(counts.items())), unreadable=self.sc.deck_check_unreadable)]


def _take_all(codes: list[str], source: list[str], missing: str) -> None:
    """Remove ``codes`` from ``source`` (a multiset of card codes), all or nothing: a card that is not there
    refuses the whole request (``missing`` names it, with ``{code}``) and changes nothing."""
    pool = Counter(source)
    for i, code in enumerate(codes):
        check_code(code, f"cards[{i}]")
        if pool[code] <= 0:
            raise Refused(ErrorCode.BAD_ARGUMENT, f"cards[{i}]: " + missing.format(code=code))
        pool[code] -= 1
    for code in codes:
        source.remove(code)
