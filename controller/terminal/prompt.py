"""A modal prompt's frame and common keys: a box in the middle of the screen, its OK button submits, any other
button and Escape cancel (``None``)."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button
from textual.widgets.button import ButtonVariant


class PromptScreen(ModalScreen[Any]):
    OK_ID: ClassVar[str] = ""  # the id of the button that submits
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    # the box (a Vertical); each prompt gives its width and border
    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical { height: auto; background: $surface; padding: 1 2; }
    """

    def ok_cancel(self, ok_label: str, variant: ButtonVariant) -> ComposeResult:
        """The last row: the OK button (``OK_ID``) and Cancel."""
        with Horizontal():
            yield Button(ok_label, variant=variant, id=self.OK_ID)
            yield Button("Cancel", id=self.OK_ID.removesuffix("-ok") + "-cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == self.OK_ID:
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _submit(self) -> None:
        raise NotImplementedError
