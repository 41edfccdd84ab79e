"""The one base of the errors the rules raise: a caller above (the table core) catches the rules' own refusals
by it (``except RulesError``), never by ``Exception``. Each error keeps its own class and message."""

from __future__ import annotations


class RulesError(Exception):
    """An error of the rules: a decision the profile forbids (``RuleViolation``), an impossible round
    (``RoundError``, ``InvalidRound``), a card code that is no card (``CardError``), a profile that cannot be
    loaded (``ProfileError``)."""
