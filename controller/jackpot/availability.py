"""Whether the jackpot may be played at all.

The display is part of the game: the players must see the meter increment (PT-2001 r.41). With the sign lost,
or the meter not fit to take bets (a hit waiting for verification, PT-2001 r.49), jackpot chips are refused.
"""

from __future__ import annotations

from collections.abc import Callable


def playable(meter_ok: bool, display_ok: bool) -> bool:
    """True only when the meter can take bets and the display shows it (PT-2001 r.41)."""
    return bool(meter_ok) and bool(display_ok)


class Availability:
    """Tracks the two inputs and calls ``on_change(playable, reason)`` when the answer changes."""

    def __init__(self, on_change: Callable[[bool, str], None] | None = None) -> None:
        self.meter_ok = True
        self.display_ok = False  # unknown until the sign answers
        self._on_change = on_change
        self._last = playable(self.meter_ok, self.display_ok)

    @property
    def playable(self) -> bool:
        return self._last

    @property
    def reason(self) -> str:
        if not self.display_ok:
            return "jackpot display not connected"
        if not self.meter_ok:
            return "jackpot hit pending verification"
        return "ok"

    def set_display(self, ok: bool) -> None:
        self.display_ok = ok
        self._update()

    def set_meter(self, ok: bool) -> None:
        self.meter_ok = ok
        self._update()

    def _update(self) -> None:
        now = playable(self.meter_ok, self.display_ok)
        if now != self._last:
            self._last = now
            if self._on_change:
                self._on_change(now, self.reason)
