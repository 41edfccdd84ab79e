"""The seam where the progressive jackpot plugs into the core (PT-2001 r.38-50)."""

from __future__ import annotations

from typing import Any

from controller.actions import CHIP_SLOT_PREFIX
from controller.effects import Effect, JournalRecord, Rejected


class JackpotSeam:
    """Where the progressive jackpot plugs in (PT-2001 r.38-50). Pure like the core; default: nothing.

    The real one is ``controller.jackpot.table.TableJackpot``; its state is part of the core's snapshot.
    """

    def snapshot(self) -> dict[str, Any] | None:
        return None

    def restore(self, data: dict[str, Any] | None) -> None:
        return None

    def state_doc(self) -> dict[str, Any] | None:
        """The retained ``state/jackpot`` document; None: not published."""
        return None

    def round_doc(self, round_id: str | None) -> dict[str, Any]:
        """Extra fields for ``state/round`` (a winning hand flagged until paid, PT-2001 r.49)."""
        return {}

    def on_open_table(self, args: dict[str, Any], profile: Any) -> list[Effect]:
        return []

    def check_close(self) -> None:
        """Raise ``Rejected`` if the table may not close (a hit pending, PT-2001 r.49)."""

    def manual_chip(self, seat: int) -> None:
        """Raise ``Rejected`` if the dealer may not enter a jackpot chip now (PT-2001 r.41b)."""

    def on_chip_sensor(
        self, seat: int, present: bool, *, betting: bool, round_id: str | None, seats: int, now: float
    ) -> list[Effect]:
        return [JournalRecord("gpio_input", {"name": f"{CHIP_SLOT_PREFIX}{seat}", "value": present})]

    def collect(
        self, round_id: str, main_bets: list[int], manual: list[int], *, seats: int, now: float
    ) -> tuple[list[int], list[Effect]]:
        """At "no more bets": the seats whose jackpot chip is accepted (PT-2001 r.41, r.45, r.47, r.48)."""
        return list(manual), []

    def on_no_more_bets(self, round_id: str, chips: list[int]) -> list[Effect]:
        """Chips are collected at "no more bets", before the deal (PT-2001 r.48)."""
        return []

    def after_initial_deal(self, round_id: str, cards: list[dict[str, Any]]) -> list[Effect]:
        """Evaluate the first cards of each seat for a jackpot hit (PT-2001 r.42)."""
        return []

    def on_progress(self, tracker: Any, phase: str) -> list[Effect]:
        """After each card or decision of the round (the first 2-4 cards of a seat, PT-2001 r.42)."""
        return []

    def on_display(self, connected: bool) -> list[Effect]:
        return []

    def on_restart(self) -> list[Effect]:
        return []

    def on_link(self, up: bool, reason: str, seq: int) -> list[Effect]:
        """A linked progressive's meter documents became valid (up) or not (docs/jackpot.md)."""
        raise Rejected("this table is on no progressive link")

    def on_link_award(self, link: str, award: Any) -> list[Effect]:
        """A prize the link's controller froze for a hit at this table: ``award`` has ``hit_id``, ``round_id``,
        ``seat``, ``combination``, ``amount_minor``, ``order`` (the core's ``LinkHitAwarded`` input)."""
        raise Rejected("this table is on no progressive link")

    def meter_units(self) -> int | None:
        """The meter (1/10,000 minor units), checked at start against the journal's meter records."""
        return None

    def pending_correction(self) -> dict[str, Any] | None:
        """A meter correction awaiting its second supervisor's confirmation (dual control); None: none."""
        return None

    def supervisor(
        self, action: str, user: str, args: dict[str, Any], *, between_rounds: bool, now: float = 0.0
    ) -> list[Effect]:
        raise Rejected("the progressive jackpot is not integrated on this table")
