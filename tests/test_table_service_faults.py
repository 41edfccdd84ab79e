"""The core's service-level faults and configuration pinning (issue 13 §1-2, issue 14 item 3), input by input.

The whole service under the same attacks is in hil_tests/test_config_pinning.py and test_journal_disk.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.effects import GpioWrite, Rejected
from controller.rules.profiles import PROFILE_DIR
from controller.table import inputs
from controller.table.core import TableCore
from drivers import events as ev
from tablebench.table_testing import Harness

PT = (PROFILE_DIR / "pt-2001.toml").read_text()


def _pinned(text: str = PT) -> dict:
    return {"profile": "pt-2001", "profile_sha256": "a" * 64, "config_sha256": "b" * 64, "profile_text": text}


def test_open_table_takes_a_profile_name_never_a_path() -> None:
    h = Harness()
    for bad in ("/tmp/evil.toml", "../pt-2001", "pt-2001.toml", "PT 2001"):
        with pytest.raises(Rejected, match="never a path"):
            h.sup("open_table", profile=bad, shuffler="continuous")
    assert h.core.state == "closed"


def test_the_session_keeps_the_pinned_rules_whatever_the_file_says_later() -> None:
    """The session's rules come from the pinned text in the journal, in recovery too (PT-2001 r.21: 3:2)."""
    h = Harness()
    h.open_continuous(pinned=_pinned())
    assert h.core.rules_profile.blackjack_pays == Fraction(3, 2)
    assert h.records("configuration_pinned")[0]["profile_sha256"] == "a" * 64
    snap = h.core.snapshot()

    def changed_on_disk(name: str):  # the file may say anything now (blackjack 1:1): it must not be read
        raise AssertionError(f"the profile file {name} was read again")

    again = TableCore(changed_on_disk)
    again.restore(snap)
    assert again.rules_profile.blackjack_pays == Fraction(3, 2)


def test_integrity_fault_blocks_dealing_until_a_supervisor_closes_the_table() -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    h.clear()
    h.apply(inputs.IntegrityFault("journal chain broken at record 7", {"record": 7}))
    assert h.core.state == "integrity" and "integrity" in h.core.view()["faults"]
    assert GpioWrite("warning_light", True) in h.effects
    assert [a.severity for a in h.alerts("integrity")] == ["critical"]
    with pytest.raises(Rejected, match="dealing blocked: integrity"):
        h.dealer("no_more_bets")
    h.sup("close_table")
    assert h.core.state == "closing" and "integrity" not in h.core.faults
    assert h.records("integrity_cleared")[0]["by"] == "close_table"


def test_integrity_fault_on_a_closed_table_blocks_open_table_until_cleared() -> None:
    h = Harness()
    h.apply(inputs.IntegrityFault("snapshot at record 3 cannot be restored", {}))
    assert h.core.state == "closed" and h.core.outputs["warning_light"] is True
    with pytest.raises(Rejected, match="integrity fault"):
        h.sup("open_table", profile="pt-2001", shuffler="continuous")
    h.sup("clear_integrity")
    assert not h.core.faults
    h.sup("open_table", profile="pt-2001", shuffler="continuous")
    assert h.core.state == "loading"


def test_journal_io_fault_locks_the_lid_and_clears_only_by_a_supervisor_then_resyncs() -> None:
    h = Harness()
    h.open_continuous()
    h.sup("unlock_lid")
    h.clear()
    h.apply(inputs.JournalFault("disk_full", "journal disk full (database or disk is full)"))
    assert h.core.state == "journal_io" and h.core.lid.unlock is None
    assert h.commands(ev.LockLid) and GpioWrite("lid_lock", True) in h.effects
    with pytest.raises(Rejected, match="dealing blocked: journal_io"):
        h.dealer("place_bet", seat=1, amount=1000)
    h.clear()
    h.sup("clear_journal_io")
    assert h.core.state == "resync" and h.commands(ev.ReportCounts)
    with pytest.raises(Rejected, match="no journal_io fault"):
        h.sup("clear_journal_io")


@pytest.mark.parametrize("state", ["closed", "deck_check_failed"])
def test_a_service_fault_without_a_session_is_listed_and_lights_the_light(state: str) -> None:
    h = Harness()
    h.core.machine.set_state(state)
    h.apply(inputs.JournalFault("read_only", "journal disk read-only (x)"))
    h.apply(inputs.IntegrityFault("journal chain broken at record 2", {"record": 2}))
    assert h.core.state == state and sorted(h.core.faults) == ["integrity", "journal_io"]
    assert h.core.outputs == {"lid_lock": True, "warning_light": True}
    h.sup("clear_journal_io")
    h.sup("clear_integrity")
    assert h.core.state == state and not h.core.faults
