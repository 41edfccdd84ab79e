"""The setup (controller/table/session.py) alone: the session and the rule profile it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.rules.profiles import Profile, load_profile
from controller.table.session import TableSetup
from tablebench.concern_kit import NOW

PROFILES = Path(__file__).resolve().parent.parent / "controller" / "data" / "profiles"


def test_a_pinned_session_runs_its_pinned_rules_never_the_file_as_it_is_now() -> None:
    """Issue 13 §2: the rules pinned when the session opened (PT-2001 r.3: six decks) survive a restore even if
    the profile file changed or went away since."""
    loads: list[str] = []

    def loader(name: str) -> Profile:
        loads.append(name)
        return load_profile(name)

    setup = TableSetup(loader)
    setup.pin({"profile": "pt-2001", "profile_text": (PROFILES / "pt-2001.toml").read_text()})
    setup.set_profile("pt-2001", "continuous")
    setup.open_session("chief", NOW)
    assert loads == [] and setup.tp.decks == 6 and setup.tp.continuous  # parsed from the pinned text

    def gone(name: str) -> Profile:
        raise FileNotFoundError(name)

    snap: dict[str, object] = {}
    setup.snapshot_into(snap)
    restored = TableSetup(gone)
    restored.restore_from(snap)
    assert restored.rules_profile.decks == 6 and restored.session == setup.session
    unpinned = TableSetup(gone)
    with pytest.raises(FileNotFoundError):
        unpinned.set_profile("pt-2001", "continuous")


def test_a_session_counts_its_packets_and_rounds_pt2001_r54() -> None:
    setup = TableSetup(load_profile)
    setup.set_profile("pt-2001", "batch")
    assert setup.shuffler == "batch" and not setup.tp.continuous and setup.tp.cut_card == "lowest_seat"
    setup.open_session("chief", NOW)
    first = setup.session.id
    setup.count_packet()
    setup.count_packet()  # PT-2001 r.54: at least two packets
    setup.count_round()
    assert (setup.session.packets, setup.session.rounds, setup.session.no) == (2, 1, 1)
    setup.close_session("chief")
    setup.open_session("chief2", NOW + 60)
    assert setup.session.no == 2 and setup.session.packets == 0 and setup.session.id != first
