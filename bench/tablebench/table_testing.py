"""Drive the pure table core directly with inputs (no I/O): for tests, the bench and integration work."""

from __future__ import annotations

from typing import Any

from controller.effects import Alert, JournalRecord, ShoeCommand
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import Step, TableCore
from drivers import events as ev


class Harness:
    def __init__(self) -> None:
        self.core = TableCore(load_profile)
        self.now = 1_790_000_000.0
        self.seq = 0
        self.effects: list[Any] = []

    # ---- inputs ----
    def apply(self, inp: inputs.Input) -> Step:
        self.now += 1.0
        step = self.core.apply(inp, self.now)
        self.effects.extend(step.effects)
        return step

    def dev(self, event: ev.DeviceEvent) -> Step:
        return self.apply(inputs.DeviceInput(event))

    def dealer(self, action: str, **args: Any) -> Step:
        return self.apply(inputs.dealer(action, args))

    def sup(self, action: str, user: str = "inspector-ana", **args: Any) -> Step:
        return self.apply(inputs.supervisor(user, action, args))

    def start_round(self, bets: dict[int, int]) -> None:
        """Bets on these seats (seat -> amount in minor units), then no more bets."""
        for seat, amount in bets.items():
            self.dealer("place_bet", seat=seat, amount=amount)
        self.dealer("no_more_bets")

    def unreadable(self, damaged: bool = True) -> None:
        """The next card leaves the shoe unread (damaged, or the reader failed): PT-2001 r.51."""
        self.seq += 1
        self.dev(ev.CardUnreadable(self.seq, damaged=damaged))

    def card(self, code: str, face_up: bool = False) -> dict[str, Any] | None:
        self.seq += 1
        self.dev(ev.CardOut(code[0], code[1], self.seq, face_up=face_up))
        rnd = self.core.round
        return rnd.cards[-1] if rnd and rnd.cards and rnd.cards[-1]["shoe_seq"] == self.seq else None

    # ---- procedures ----
    def open_continuous(self, profile: str = "pt-2001", **open_args: Any) -> None:
        """PT-2001 r.53-54: lid opened for loading, two packets, lid closed, shuffle, count = decks x 52.
        ``open_args``: more arguments of ``open_table`` (e.g. the jackpot configuration)."""
        self.sup("open_table", profile=profile, shuffler="continuous", **open_args)
        total = self.core.tp.total_cards
        self.dev(ev.LidChanged(ev.LidState.OPEN))
        self.dev(ev.DiscardInserted(total // 2))
        self.dev(ev.DiscardInserted(total - total // 2))
        self.dev(ev.LidChanged(ev.LidState.CLOSED))
        self.dev(ev.ShuffleStarted())
        self.dev(ev.ShuffleFinished(total))

    def open_batch(self, profile: str = "pt-2001") -> None:
        self.sup("open_table", profile=profile, shuffler="batch")
        self.dev(ev.ShuffleStarted())
        self.dev(ev.ShuffleFinished(self.core.tp.total_cards))
        self.seq = 0

    def lid_cycle(self) -> None:
        """Continuous: the lid opened automatically; the round's cards go in; the lid closes (r.59-60)."""
        self.dev(ev.LidChanged(ev.LidState.OPEN))
        self.dev(ev.DiscardInserted(self.core.out))
        self.dev(ev.LidChanged(ev.LidState.CLOSED))

    # ---- looking at effects ----
    def alerts(self, kind: str | None = None) -> list[Alert]:
        return [e for e in self.effects if isinstance(e, Alert) and (kind is None or e.kind == kind)]

    def commands(self, cls: type | None = None) -> list[ev.Command]:
        return [
            e.command
            for e in self.effects
            if isinstance(e, ShoeCommand) and (cls is None or isinstance(e.command, cls))
        ]

    def records(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.effects if isinstance(e, JournalRecord) and e.kind == kind]

    def clear(self) -> None:
        self.effects.clear()


def play_two_rounds(h: Harness, **open_args: Any) -> None:
    """Two rounds of PT-2001 on a continuous shuffler: two seats (a stand, a hit), then one seat doubling.
    ``open_args``: more arguments of ``open_table`` (e.g. the configuration the service pins)."""
    h.open_continuous(**open_args)
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("no_more_bets")
    for c in ["2C", "TS", "6D", "9H", "7S", "KH", "8D"]:  # burn (PT-2001 r.10), then the deal (r.17)
        h.card(c)
    h.dealer("stand")  # seat 1: the decision names no seat, the turn does
    h.card("5C")  # seat 2 hits by taking a card
    h.lid_cycle()
    h.dealer("next_round")
    h.dealer("place_bet", seat=1, amount=2000)
    h.dealer("no_more_bets")
    for c in ["5S", "6H", "4D", "9C"]:
        h.card(c)
    h.dealer("double")
    h.card("TH")
    h.card("3S")  # the dealer draws to 18 (PT-2001 r.19)
    h.lid_cycle()
