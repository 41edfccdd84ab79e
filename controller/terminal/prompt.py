"""A modal prompt's common keys: its OK button submits, any other button and Escape cancel (``None``)."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Button


class PromptScreen(ModalScreen[Any]):
    OK_ID: ClassVar[str] = ""  # the id of the button that submits
    BINDINGS: ClassVar[list[Binding]] = [Binding("escape", "cancel", "Cancel")]

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == self.OK_ID:
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _submit(self) -> None:
        raise NotImplementedError
