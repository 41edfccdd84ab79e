"""The two ways `tablectl run` ends before the service runs: each message is the one line it prints."""

from __future__ import annotations


class StartupError(Exception):
    """The service cannot start at all; the message is the one line ``tablectl run`` prints."""


class OptionsError(Exception):
    """Command-line options that do not fit the configuration (exit 2); the message is the whole line."""
