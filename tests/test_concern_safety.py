"""The safety outputs (controller/table/outputs.py) alone: derived from the state, written once when changed."""

from __future__ import annotations

from controller.effects import GpioWrite
from controller.table.machine_names import TableState
from controller.table.outputs import SAFE_OUTPUTS, SafetyOutputs
from controller.table.sink import EffectSink
from controller.table.state import JamFault, LidStatus, Unlock
from drivers import events as ev
from tablebench.concern_kit import commands, sink


def writes(fx: EffectSink) -> list[GpioWrite]:
    return [e for e in fx.items if isinstance(e, GpioWrite)]


def test_a_fault_lights_the_warning_light_once_pt2001_r51() -> None:
    fx = sink()
    safety = SafetyOutputs(fx)
    safety.restore_from({"outputs": {"lid_lock": True, "warning_light": False}})  # a table in play
    safety.sync(TableState.JAMMED, LidStatus(), {"jam": JamFault(location="input")}, False)
    assert writes(fx) == [GpioWrite("warning_light", True)]
    assert commands(fx) == [ev.SetWarningLight(True)]  # the shoe's own light too
    safety.sync(TableState.JAMMED, LidStatus(), {"jam": JamFault(location="input")}, False)
    assert len(writes(fx)) == 1  # unchanged: nothing written again
    # a damaged card awaiting the chief inspector keeps it on outside a fault state (r.51)
    safety.sync(TableState.SETTLED, LidStatus(), {}, True)
    assert len(writes(fx)) == 1 and safety.values["warning_light"] is True


def test_the_lid_lock_opens_only_while_an_opening_is_granted_pt2001_r60() -> None:
    fx = sink()
    safety = SafetyOutputs(fx)
    assert safety.values == dict(SAFE_OUTPUTS) and safety.values["lid_lock"] is True
    safety.sync(TableState.SETTLED, LidStatus(unlock=Unlock.AUTO), {}, False)
    assert writes(fx)[0] == GpioWrite("lid_lock", False)
    safety.sync(TableState.CARDS_RETURNED, LidStatus(), {}, False)
    assert writes(fx)[-1] == GpioWrite("lid_lock", True)


def test_a_rebooted_shoe_is_told_its_lock_and_light_again_pt2001_r60() -> None:
    fx = sink()
    safety = SafetyOutputs(fx)
    safety.restore_from({"outputs": {"lid_lock": True, "warning_light": True}})
    safety.to_rebooted_shoe(locked=True)
    assert commands(fx) == [ev.LockLid(), ev.SetWarningLight(True)]
    snap: dict[str, object] = {}
    safety.snapshot_into(snap)
    assert snap == {"outputs": {"lid_lock": True, "warning_light": True}}
