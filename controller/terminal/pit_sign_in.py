"""The dealer's sign-in prompt (issue 29): the name of the dealer taking the table; the controller checks it
(controller/table/dealer_duty.py) and says why when it refuses."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label

from controller.plain import clean
from controller.terminal.prompt import PromptScreen

NAME_MAX = 32  # the controller's limit; longer input cannot be typed


class DealerNameScreen(PromptScreen):
    """Modal: the name typed (stripped), or None when cancelled (Escape) or left empty."""

    OK_ID = "dealer-ok"

    DEFAULT_CSS = """
    DealerNameScreen > Vertical { width: 50; border: thick $primary; }
    """

    def __init__(self, on_duty: str | None) -> None:
        super().__init__()
        self.on_duty = on_duty

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Dealer sign-in", style="bold"))
            now = f"on duty now: {clean(self.on_duty, 40)}" if self.on_duty else "nobody is signed in"
            yield Label(Text(now))
            yield Input(placeholder="your name", max_length=NAME_MAX, id="dealer-name")
            yield from self.ok_cancel("Sign in", "primary")

    def on_mount(self) -> None:
        self.query_one("#dealer-name", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self._submit()

    def _submit(self) -> None:
        name = self.query_one("#dealer-name", Input).value.strip()
        self.dismiss(name or None)
