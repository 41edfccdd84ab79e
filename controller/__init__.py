"""Blackjack table controller: game logic, table state machine, journal, jackpot and MQTT reporting."""

__version__ = "0.1.0"
