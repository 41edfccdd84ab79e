"""The jackpot's desk (controller/table/jackpot_desk.py) alone: the supervisor's four jackpot actions."""

from __future__ import annotations

from typing import Any

from controller.effects import JournalRecord
from controller.jackpot.seam import JackpotSeam
from controller.table.jackpot_desk import JackpotDesk
from tablebench.concern_kit import NOW, Stub, records, sink


class Seam(JackpotSeam):
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, bool, float]] = []
        self.state: dict[str, Any] | None = None

    def supervisor(
        self, action: str, user: str, args: dict[str, Any], *, between_rounds: bool, now: float
    ) -> list[Any]:
        self.asked.append((action, user, between_rounds, now))
        return [JournalRecord("jackpot_action", {"action": action})]

    def pending_correction(self) -> dict[str, Any] | None:
        return {"correction_id": "c1", "expires_at": "2026-01-01T12:05:00Z"}

    def snapshot(self) -> dict[str, Any] | None:
        return self.state

    def restore(self, data: dict[str, Any] | None) -> None:
        self.state = data


def test_a_meter_correction_is_made_between_rounds_only_pt2001_r49() -> None:
    fx, seam = sink(), Seam()
    rounds = Stub({"round_active": True})
    desk = JackpotDesk(fx, seam, rounds)
    desk.handlers().supervisor["jackpot_correct"]("chief", {"amount": 100})
    assert seam.asked == [("jackpot_correct", "chief", False, NOW)]  # a round in progress: not between
    assert fx.result == {"correction_id": "c1", "confirm_by": "2026-01-01T12:05:00Z"}  # dual control
    rounds._returns["round_active"] = False
    desk.handlers().supervisor["jackpot_correct_confirm"]("chief2", {})
    assert seam.asked[-1] == ("jackpot_correct_confirm", "chief2", True, NOW)
    assert records(fx, "jackpot_action") == [
        {"action": "jackpot_correct"},
        {"action": "jackpot_correct_confirm"},
    ]


def test_verify_and_pay_are_not_timed_and_the_slice_is_the_seams_pt2001_r49() -> None:
    fx, seam = sink(), Seam()
    desk = JackpotDesk(fx, seam, Stub({"round_active": False}))
    assert set(desk.handlers().supervisor) == {
        "jackpot_verify",
        "jackpot_pay",
        "jackpot_correct",
        "jackpot_correct_confirm",
    }
    desk.handlers().supervisor["jackpot_pay"]("chief", {"hit": "h1"})
    assert seam.asked == [("jackpot_pay", "chief", False, 0.0)] and fx.result == {}
    seam.state = {"meter": 12345}
    snap: dict[str, Any] = {}
    desk.snapshot_into(snap)
    assert snap == {"jackpot": {"meter": 12345}}
    desk.restore_from({"jackpot": None})
    assert seam.state is None
