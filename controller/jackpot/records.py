"""The effects the table's jackpot returns (PT-2001 r.38-50): its ``events/jackpot`` publishes, the journal's
account of each meter change, its alerts and its chip refusals. Used by ``TableJackpot`` (table.py), its chip
slots (slots.py) and its supervisor's desk (supervision.py)."""

from __future__ import annotations

from typing import Any

from controller.effects import Alert, Effect, Event, EventKind, JournalRecord
from controller.jackpot import meter as mt

RECORD_KIND = "jackpot"  # every meter change: MeterRecord + the meter after it, one journal record each
UNPLAYABLE = "unplayable"  # chip_refused reason when the jackpot cannot be played (display lost, hit pending)


def event(fx: list[Effect], action: str, **data: Any) -> None:
    """An ``events/jackpot`` publish."""
    fx.append(Event(EventKind.JACKPOT, {"action": action, **data}))


def meter_record(fx: list[Effect], rec: mt.MeterRecord, meter: mt.MeterState, **extra: Any) -> None:
    """The journal's account of a meter change, with the meter after it (reconciliation reads these)."""
    data = {**rec.to_dict(), **extra, "meter_units": meter.meter_units}
    fx.append(JournalRecord(RECORD_KIND, data))


def alert(fx: list[Effect], kind: str, severity: str, reason: str, **details: Any) -> None:
    """An alert, and the jackpot's own journal record of it."""
    fx.append(Alert(kind, severity, reason, details))
    # Not kind "alert": that kind belongs to the AlertManager's book, which journals the alert itself.
    record = {"kind": kind, "severity": severity, "reason": reason, **details}
    fx.append(JournalRecord("jackpot_alert", record))


def refuse(fx: list[Effect], seat: int, reason: str, message: str, round_id: str | None) -> None:
    """A jackpot chip refused: journaled and published (the dealer returns it)."""
    data: dict[str, Any] = {"seat": seat, "reason": reason, "message": message}
    if round_id:
        data["round_id"] = round_id
    fx.append(JournalRecord("jackpot_chip_refused", dict(data)))
    event(fx, "chip_refused", **data)
