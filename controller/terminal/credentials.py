"""The credential prompt for supervisor actions: user + PIN (the PIN opens the user's Ed25519 key file, which
signs the command, docs/mqtt.md "Signed commands"; it is never stored or shown) and, for actions that need one,
an argument."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label

from controller.mqtt.userkeys import KeyFileError, check_pin
from controller.plain import clean
from controller.terminal.prompt import PromptScreen


@dataclass(frozen=True)
class Credential:
    user: str
    pin: str
    arg: str = ""


class CredentialScreen(PromptScreen):
    """Modal: returns a Credential, or None when cancelled (Escape)."""

    OK_ID = "cred-ok"

    DEFAULT_CSS = """
    CredentialScreen > Vertical { width: 60; border: thick $warning; }
    CredentialScreen Input { margin-bottom: 1; }
    CredentialScreen #cred-error { color: $error; }
    """

    def __init__(self, action: str, arg_label: str | None = None, arg_default: str = "") -> None:
        super().__init__()
        self.action_name = action
        self.arg_label = arg_label
        self.arg_default = arg_default

    def compose(self) -> ComposeResult:
        with Vertical():
            # the action text may carry outside strings (a table id, an alert id): plain text, never markup
            title = Text.assemble("Supervisor action: ", (clean(self.action_name, 120), "bold"))
            yield Label(title, id="cred-title")
            yield Input(placeholder="user", id="cred-user")
            yield Input(placeholder="PIN", password=True, id="cred-pin")
            if self.arg_label:
                yield Label(Text(clean(self.arg_label, 120)))
                yield Input(value=clean(self.arg_default, 200), id="cred-arg")
            yield Label("", id="cred-error")
            yield from self.ok_cancel("Sign and send", "warning")

    def on_mount(self) -> None:
        self.query_one("#cred-user", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "cred-user":
            self.query_one("#cred-pin", Input).focus()
        else:
            self._submit()

    def _submit(self) -> None:
        user = self.query_one("#cred-user", Input).value.strip()
        pin = self.query_one("#cred-pin", Input).value
        arg = self.query_one("#cred-arg", Input).value.strip() if self.arg_label else ""
        if not user or not pin:
            self.query_one("#cred-error", Label).update(Text("user and PIN are both required"))
            return
        try:
            check_pin(pin)
        except KeyFileError as exc:
            self.query_one("#cred-error", Label).update(Text(str(exc)))
            return
        self.dismiss(Credential(user, pin, arg))
