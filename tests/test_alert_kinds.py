"""Every alert the code raises has a kind the alert manager accepts, and the schemas and docs list the same kinds
(controller/alert_kinds.py). An unlisted kind is refused by the manager: the alert would never reach the floor
(PT-2001 r.51, r.55: the chief inspector must be called)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from controller.alert_kinds import ALERT_KINDS
from controller.journal.store import Journal
from controller.mqtt.alerts import AlertManager

ROOT = Path(__file__).resolve().parent.parent


def _raised_kinds() -> dict[str, str]:
    """kind -> where, for every alert raised with a literal kind in controller/ and floor/."""
    found: dict[str, str] = {}
    for path in [*(ROOT / "controller").rglob("*.py"), *(ROOT / "floor").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in (
                "alert",
                "_alert",
                "raise_alert",
                "raise_",
            ):  # the core's effect sink, the jackpot's
                continue
            for arg in node.args[:2]:  # the jackpot's _alert(fx, kind, ...) has the effects list first
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, f"{path.relative_to(ROOT)}:{node.lineno}")
                    break
    return found


def test_every_kind_the_code_raises_is_listed() -> None:
    raised = _raised_kinds()
    assert len(raised) >= 15  # the scan found the table core's alerts, not nothing
    missing = {k: where for k, where in raised.items() if k not in ALERT_KINDS}
    assert not missing, f"alert kinds raised but not in controller/alert_kinds.py: {missing}"


def test_schema_and_docs_list_the_same_kinds() -> None:
    schema = json.loads((ROOT / "schemas/mqtt/alerts_open.schema.json").read_text(encoding="utf-8"))
    assert schema["$defs"]["alert"]["properties"]["kind"]["enum"] == list(ALERT_KINDS)
    doc = (ROOT / "docs/mqtt.md").read_text(encoding="utf-8")
    assert [k for k in ALERT_KINDS if f"`{k}`" not in doc] == []


@pytest.mark.parametrize("kind", sorted(ALERT_KINDS))
def test_the_manager_accepts_and_publishes_every_kind(tmp_path: Path, kind: str) -> None:
    journal = Journal(tmp_path / "j.db", table_id="T1")
    try:
        manager = AlertManager(journal)
        manager.raise_alert(kind, "critical", f"a {kind} alert", rule="PT-2001 r.51")
        (row,) = [r for r in journal.outbox_pending(0, 100) if r.topic == "alerts/open"][-1:]
        assert [a["kind"] for a in json.loads(row.payload)["data"]["alerts"]] == [kind]
    finally:
        journal.close()
