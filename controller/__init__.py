"""Blackjack table controller: game logic, table state machine, journal, jackpot and MQTT reporting."""

from importlib.metadata import PackageNotFoundError, version

try:  # one definition of the version: pyproject.toml's, as installed (`tablectl --version`, state/software)
    __version__ = version("blackjack-table-controller")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"
