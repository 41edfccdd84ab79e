"""One list of command names (controller/actions.py): the MQTT dealer schema and the terminal agree with it."""

from __future__ import annotations

import json
from pathlib import Path

from controller.actions import DEALER_ACTIONS, PLAYER_ACTIONS, SUPERVISOR_ACTIONS
from controller.terminal.pit_keys import DEALER_KEYS, PLAYER_KEYS, SUPERVISOR_KEYS

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas" / "mqtt"


def test_dealer_schema_accepts_exactly_the_dealer_actions() -> None:
    schema = json.loads((SCHEMAS / "cmd_dealer.schema.json").read_text())
    assert set(schema["properties"]["action"]["enum"]) == set(DEALER_ACTIONS)


def test_the_pit_terminal_has_a_key_for_every_dealer_decision_and_known_supervisor_actions() -> None:
    # the cut is asked on the batch-shoe screen; the dealer signs in by its own key (DEALER_SIGN_IN_KEY, a prompt);
    # players are seated and unseated by theirs (PLAYER_KEYS: a prompt, or a card swiped into the screen)
    assert set(DEALER_ACTIONS) - {"cut", "dealer_sign_in", *PLAYER_ACTIONS} <= set(DEALER_KEYS)
    assert set(PLAYER_KEYS) == set(PLAYER_ACTIONS)
    assert set(SUPERVISOR_KEYS) <= set(SUPERVISOR_ACTIONS)
