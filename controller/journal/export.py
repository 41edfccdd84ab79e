"""Export a session's rounds from the journal as JSON lines in the round-description format (docs/rounds.md),
so each round can be settled again with ``tablectl replay`` (PT-2001 r.62: complaints are checked against the
record). The table writes a ``round_final`` record per round; a later one for the same round (a card the
dealer drew after the round ended, PT-2001 r.19) supersedes the earlier one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from controller.jackpot.config import CURRENCY_CODE
from controller.journal.store import Journal


class ExportError(Exception):
    pass


def sessions(journal: Journal) -> list[str]:
    """Session ids in the order they appear in the journal."""
    seen: list[str] = []
    for rec in journal.records(kinds=("round_final",)):
        sid = rec.data.get("session_id")
        if sid and sid not in seen:
            seen.append(sid)
    return seen


def final_rounds(journal: Journal, session_id: str | None = None) -> Iterator[dict[str, Any]]:
    """The last ``round_final`` record of each round of the session (default: the latest), in round order."""
    if session_id is None:
        known = sessions(journal)
        if not known:
            return
        session_id = known[-1]
    latest: dict[str, dict[str, Any]] = {}
    for rec in journal.records(kinds=("round_final",)):
        if rec.data.get("session_id") == session_id:
            latest[rec.data["round_id"]] = rec.data  # dicts keep first-insertion order: round order
    yield from latest.values()


def export_session(journal: Journal, out: TextIO, session_id: str | None = None) -> tuple[int, int]:
    """Write one description per line; void rounds (PT-ONLINE-2015 r.27-28) are skipped: nothing to settle.
    Returns (exported, void)."""
    if session_id is not None and session_id not in sessions(journal):
        raise ExportError(
            f"no rounds for session {session_id!r} (sessions: {', '.join(sessions(journal)) or 'none'})"
        )
    exported = void = 0
    currency = table_currency(journal)
    for data in final_rounds(journal, session_id):
        if data.get("void"):
            void += 1
            continue
        doc = dict(data["description"])
        # The table's own record of the round, so `tablectl replay -` can say whether it settles the same.
        doc["journal"] = {k: data.get(k) for k in ("session_id", "round_id", "settlement")}
        if currency:  # what the amounts are in, for the dispute report (`replay --report`: "amounts in EUR")
            doc["journal"]["currency"] = currency
        out.write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
        exported += 1
    return exported, void


def table_currency(journal: Journal) -> str | None:
    """The table's currency as its retained ``state/jackpot`` says (ISO 4217), None when it has none."""
    for topic, payload in journal.retained_state().items():
        if not topic.endswith("/state/jackpot"):
            continue
        try:
            doc = json.loads(payload)
        except (TypeError, ValueError):
            return None
        data = doc.get("data", doc) if isinstance(doc, dict) else None
        currency = data.get("currency") if isinstance(data, dict) else None
        return currency if isinstance(currency, str) and CURRENCY_CODE.fullmatch(currency) else None
    return None
