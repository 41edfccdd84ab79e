"""The pit's player-card reader (issue 41): a USB keyboard-wedge (HID) magnetic card reader types what it read as
keystrokes, very fast, and ends with Enter. Track 2 (ISO/IEC 7813) is ``;<account number>[=<more digits>]?``:
the account number is the player card's number. Some readers send track 1 first, ``%B<number>^<NAME>^...?``: it
carries the holder's name, so it is never kept, shown or logged, only skipped. A card typed by hand (the
fallback) is its number alone.

Two parts, both pure (the app, pit.py, feeds them its key events): ``card_from_entry`` takes the card number out
of what was typed or swiped into a field (the player prompt, pit_player.py); ``SwipeCapture`` recognises a swipe
typed into the main screen, where the digits would otherwise select seats, by its start sentinel and speed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from controller.table.player_ids import CARD_MAX, CARD_MIN, CARD_NUMBER

TRACK2_START, TRACK1_START, END = ";", "%", "?"
# the account number: digits only on track 2 (4-32: a player card need not be a payment card's 12-19)
TRACK2 = re.compile(rf";([0-9]{{{CARD_MIN},{CARD_MAX}}})(?:=[0-9=]{{0,40}})?\?")
SWIPE_MAX = 200  # track 1 (79) + track 2 (40) + sentinels: longer is no card
SWIPE_GAP_S = 0.5  # a reader types a character every few milliseconds; a person is slower than this


class NotACard(ValueError):
    """What was entered is no card number; the message never repeats it (a track 1 carries a name)."""


def card_from_entry(text: str) -> str:
    """The player card's number from a swipe (track 2, with or without track 1 before it) or a typed number."""
    entry = text.strip()
    if TRACK2_START in entry:
        found = TRACK2.search(entry)
        if found is None:
            raise NotACard("the card was not read completely: swipe it again (or type its number)")
        return found.group(1)
    if entry.startswith(TRACK1_START):
        raise NotACard("the reader sent no track 2 (the player card's number): set it to send track 2")
    if not CARD_NUMBER.fullmatch(entry):
        raise NotACard(f"a player card number is {CARD_MIN}-{CARD_MAX} letters or digits")
    return entry


class Swipe(Enum):
    """What one key is to the capture."""

    PASS = "pass"  # not part of a swipe: the app handles the key as usual
    TAKEN = "taken"  # part of a swipe in progress
    DONE = "done"  # the swipe's Enter: ``SwipeCapture.take()`` gives what was read


@dataclass
class SwipeCapture:
    """A swipe into the main screen: a start sentinel (``;`` or ``%``), characters each within ``gap_s`` of the
    one before, and Enter. A pause longer than that (a person pressing ``;``) drops what was taken and the key
    is handled as usual; so does any key that is not a character."""

    gap_s: float = SWIPE_GAP_S
    _text: str = ""  # the swipe read, once DONE, until taken
    _buffer: list[str] = field(default_factory=list)
    _last: float | None = None

    @property
    def capturing(self) -> bool:
        return self._last is not None

    def feed(self, key: str, character: str | None, now: float) -> Swipe:
        if self._last is not None and now - self._last > self.gap_s:
            self._reset()  # too slow for a reader: what was taken was typed by a person
        if self._last is None:
            if character in (TRACK2_START, TRACK1_START):
                self._buffer, self._last = [character], now
                return Swipe.TAKEN
            return Swipe.PASS
        if key == "enter":
            self._text = "".join(self._buffer)
            self._reset()
            return Swipe.DONE
        if character is None or not character.isprintable() or len(self._buffer) >= SWIPE_MAX:
            self._reset()
            return Swipe.PASS
        self._buffer.append(character)
        self._last = now
        return Swipe.TAKEN

    def take(self) -> str:
        """The swipe read (after DONE), once: nothing of it stays here."""
        text, self._text = self._text, ""
        return text

    def _reset(self) -> None:
        self._buffer, self._last = [], None
