"""Each of these is defined once and imported everywhere else (issue 17): the card alphabet (drivers/cards.py),
the outputs' safe values (controller/gpio/base.py), the command roles and the dealer's buttons
(controller/actions.py), the 64-hex pattern of digests and public keys (controller/hex64.py). A second literal
copy would let the two drift apart; these tests find one by reading every module of controller/ and drivers/
with ast."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

from controller import actions, topics
from controller.config.keys import INPUT_SIGNALS
from controller.config.model import OUTPUT_SAFE_VALUES
from controller.gpio import base as gpio_base
from controller.rules import cards as rule_cards
from controller.rules.types import Action
from controller.table.core import CARD_CODES
from drivers import cards, events

ROOT = Path(__file__).resolve().parent.parent
# The core's own copy of the outputs as they stand after a restart (state.py, link.py) is rewritten with the
# state machine (issue 17, the "machine" part); it is the state the shell's safe values put the outputs in.
SAFE_OUTPUTS_ELSEWHERE: set[str] = set()  # none: the core's outputs.py imports controller/gpio/base.py's


def _nodes() -> Iterator[tuple[str, ast.AST]]:
    for package in ("controller", "drivers", "floor"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                yield rel, node


def _strings(node: ast.AST) -> list[str] | None:
    """The elements of a tuple/list/set literal made only of strings, else None."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set) or not node.elts:
        return None
    if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _where(match: Callable[[ast.AST], bool]) -> set[str]:
    return {rel for rel, node in _nodes() if match(node)}


def test_the_card_alphabet_is_written_once() -> None:
    found = _where(lambda n: isinstance(n, ast.Constant) and n.value in (cards.RANKS, cards.SUITS))
    assert found == {"drivers/cards.py"}
    assert events.RANKS is cards.RANKS and rule_cards.SUITS is cards.SUITS
    assert len(CARD_CODES) == 52 and set(CARD_CODES) == {r + s for r in cards.RANKS for s in cards.SUITS}


def test_the_roles_are_listed_once() -> None:
    def is_role_list(n: ast.AST) -> bool:
        items = _strings(n)
        return items is not None and len(items) >= 2 and set(items) <= {*actions.ACCOUNT_ROLES}

    assert _where(is_role_list) == {"controller/actions.py"}
    assert topics.ROLES is actions.ROLES and topics.SIGNED_ROLES is actions.SIGNED_ROLES


def test_the_dealer_buttons_are_listed_once() -> None:
    def is_button_list(n: ast.AST) -> bool:
        items = _strings(n)
        return items is not None and len(items) >= 3 and set(items) <= set(actions.BUTTONS)

    assert _where(is_button_list) == {"controller/actions.py"}
    assert set(INPUT_SIGNALS) == {"lid_switch", *actions.BUTTON_ACTIONS}


def test_the_safe_output_values_are_written_once() -> None:
    def is_safe_values(n: ast.AST) -> bool:
        if not isinstance(n, ast.Dict) or not n.keys:
            return False
        keys = {k.value for k in n.keys if isinstance(k, ast.Constant)}
        constant = all(isinstance(v, ast.Constant) and isinstance(v.value, bool) for v in n.values)
        return keys == set(OUTPUT_SAFE_VALUES) and constant  # a literal, not outputs derived from state

    assert _where(is_safe_values) - SAFE_OUTPUTS_ELSEWHERE == {"controller/gpio/base.py"}
    assert OUTPUT_SAFE_VALUES is gpio_base.OUTPUT_SAFE_VALUES
    assert dict(OUTPUT_SAFE_VALUES) == {"lid_lock": True, "warning_light": True}  # PT-2001 r.51, r.60


def test_the_64_hex_pattern_of_digests_and_public_keys_is_written_once() -> None:
    from controller.hex64 import HEX64

    found = _where(lambda n: isinstance(n, ast.Constant) and n.value == HEX64.pattern)
    assert found == {"controller/hex64.py"}


def test_the_insurance_decision_has_one_name_and_one_translation() -> None:
    """Issue 31: the dealer command ``decline_insurance`` (docs/mqtt.md) and the rules engine's ``no_insurance``
    (docs/rounds.md) are one decision: each name is written once, in controller/actions.py, which alone translates;
    the rules engine's ``Action.NO_INSURANCE`` takes its value from there."""
    found = {
        name: _where(lambda n, name=name: isinstance(n, ast.Constant) and n.value == name)
        for name in ("decline_insurance", "no_insurance")
    }
    assert found == {
        "decline_insurance": {"controller/actions.py"},
        "no_insurance": {"controller/actions.py"},
    }
    assert actions.engine_action(actions.DECLINE_INSURANCE) == "no_insurance"
    assert actions.command_name("no_insurance") == actions.DECLINE_INSURANCE
    assert actions.engine_action("hit") == "hit" == actions.command_name("hit")
    assert Action.NO_INSURANCE.value == actions.NO_INSURANCE
