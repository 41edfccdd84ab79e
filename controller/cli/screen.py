"""Starting a screen from its command (`tablectl terminal`, `tablectl alerts`): its connection is built from the
options and the client configuration file first, so a setting that cannot be used is one line and exit 2, never
a screen that cannot connect."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from textual.app import App

from controller.mqtt.client_options import ClientConfigError
from controller.terminal.broker_password import PasswordError


def run_screen(command: str, build: Callable[[], App[Any]]) -> int:
    try:
        app = build()
    except ClientConfigError as exc:
        print(f"{command}: {exc}", file=sys.stderr, flush=True)
        return 2
    except PasswordError as exc:  # its message names the command already
        print(exc, file=sys.stderr, flush=True)
        return 2
    app.run()
    return 0
