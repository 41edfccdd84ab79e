"""The lid (controller/table/lid.py) alone: its reports, the openings it grants, the lid timeout."""

from __future__ import annotations

from controller.table.lid import Lid
from controller.table.sink import EffectSink
from controller.table.state import Unlock
from drivers import events as ev
from drivers.events import LidState
from tablebench.concern_kit import NOW, commands, records, sink


def build() -> tuple[Lid, list[str], EffectSink]:
    fx = sink()
    tampered: list[str] = []
    return Lid(fx, on_tamper=tampered.append), tampered, fx


def test_an_opening_not_granted_is_tamper_pt2001_r60() -> None:
    lid, tampered, _fx = build()
    lid.on_changed(ev.LidChanged(LidState.OPEN))
    assert len(tampered) == 1 and lid.position == LidState.FORCED_OPEN  # the lid machine's word for it
    # granted by a supervisor (PT-2001 r.51): the opening is no tamper
    lid2, tampered2, fx2 = build()
    lid2.sv_unlock_lid("chief", {})
    assert lid2.unlock == Unlock.SUPERVISOR and isinstance(commands(fx2)[-1], ev.UnlockLid)
    lid2.on_changed(ev.LidChanged(LidState.OPEN))
    assert tampered2 == []
    assert records(fx2, "lid")[-1]["unlocked_by"] == "supervisor:chief"


def test_the_lid_not_opened_in_time_carries_the_cards_pt2001_r61() -> None:
    lid, _tampered, fx = build()
    lid.open_by(NOW + 10)
    assert lid.unlock == Unlock.AUTO and isinstance(commands(fx)[-1], ev.OpenLid)
    lid.tick(NOW + 9, ["r1"])
    assert lid.unlock == Unlock.AUTO  # not due yet
    lid.tick(NOW + 10, ["r1"])
    assert lid.unlock is None and isinstance(commands(fx)[-1], ev.LockLid)
    assert records(fx, "lid_not_opened") == [
        {"reason": "lid did not open after the round", "carried": ["r1"]}
    ]


def test_closing_the_lid_locks_it_again_and_the_slice_round_trips_pt2001_r60() -> None:
    lid, _tampered, fx = build()
    lid.sv_unlock_lid("chief", {})
    lid.on_changed(ev.LidChanged(LidState.OPEN))
    lid.on_changed(ev.LidChanged(LidState.CLOSED))
    assert lid.unlock is None and isinstance(commands(fx)[-1], ev.LockLid)
    snap: dict[str, object] = {}
    lid.snapshot_into(snap)
    other, _, _ = build()
    other.restore_from(snap)
    assert other.status == lid.status and other.position == LidState.CLOSED
