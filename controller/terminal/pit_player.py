"""The player prompt (issue 41): seat a player at the selected seat by his player card (swiped through the card
reader into the card field, or its number typed) or as an anonymous player with a description. The controller
checks both again (controller/table/players.py) and says why when it refuses."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label

from controller.plain import clean
from controller.table.player_ids import DESCRIPTION_MAX
from controller.terminal.card_reader import SWIPE_MAX, NotACard, card_from_entry
from controller.terminal.prompt import PromptScreen


def player_args(card_entry: str, description: str) -> dict[str, Any]:
    """``player_in``'s arguments (without the seat) from the prompt's two fields: the card when one was swiped
    or typed, else the anonymous player's description; ``NotACard`` when the card field holds no card."""
    if card_entry.strip():
        return {"card": card_from_entry(card_entry)}
    if description.strip():
        return {"anonymous": description.strip()}
    raise NotACard("swipe the player card, type its number, or describe an anonymous player")


class PlayerScreen(PromptScreen):
    """Modal: ``player_in``'s arguments (a dict), a ``NotACard`` to show, or None when cancelled (Escape)."""

    OK_ID = "player-ok"

    DEFAULT_CSS = """
    PlayerScreen > Vertical { width: 64; border: thick $primary; }
    PlayerScreen Input { margin-bottom: 1; }
    """

    def __init__(self, seat: int, seated: str | None) -> None:
        super().__init__()
        self.seat, self.seated = seat, seated

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Player in at seat {self.seat}", style="bold"))
            now = f"seated now: {clean(self.seated, 60)}" if self.seated else "nobody is seated here"
            yield Label(Text(now))
            yield Input(placeholder="swipe the player card, or type its number", max_length=SWIPE_MAX,
                        id="player-card")  # fmt: skip
            yield Input(placeholder="or an anonymous player: a short description", max_length=DESCRIPTION_MAX,
                        id="player-anon")  # fmt: skip
            yield from self.ok_cancel("Seat the player", "primary")

    def on_mount(self) -> None:
        self.query_one("#player-card", Input).focus()  # the reader types into the focused field

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self._submit()  # the reader's Enter, or the dealer's

    def _submit(self) -> None:
        card = self.query_one("#player-card", Input).value
        about = self.query_one("#player-anon", Input).value
        try:
            self.dismiss(player_args(card, about))
        except NotACard as exc:
            self.dismiss(exc)
