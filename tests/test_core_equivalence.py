"""The table core, proven equivalent to the core as it was before the restructuring (issue 17).

tests/data/core_equivalence/ holds the recorded inputs of the whole test suite and of a 1,000-round bench soak
with every fault kind (``tablectl bench soak --rounds 1000 --seed 42 --faults --outage-seconds 2``), taken on
the unchanged core (commit e92125c), re-recorded once for the deliberate change of state/table
(``dealer_inputs``, issue 17 step 2), by tests/support/core_recorder.py: per core instance, how it was built and
every call into it (``apply``, ``publish_states``, ``snapshot``, ``restore``, ``view``) with its result as
canonical JSON. Each session is replayed here through the current core and every result compared byte for
byte: the journal records, the published topics and texts, the alerts, the shoe commands, the GPIO writes,
refusals with their reasons, the snapshot documents (persisted in journals in the field) and a hash of the
state after every call. How to record again: docs/CONTRIBUTING.md ("Changing the table core")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.core_replay import Mismatch, first_session_with, read_lines, replay, sessions

DATA = Path(__file__).parent / "data" / "core_equivalence"
RECORDINGS = sorted(DATA.glob("*.jsonl.gz"))


def test_recordings_are_there() -> None:
    names = {p.name for p in RECORDINGS}
    assert {"suite.jsonl.gz", "soak.jsonl.gz"} <= names, names


# The soak's recording replays in 45-90 s on a loaded 2-core machine, near the suite's default 120 s per test.
@pytest.mark.timeout(360)
@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_current_core_replays_every_recorded_call_byte_for_byte(recording: Path) -> None:
    found = sessions(read_lines(recording), recording.name)
    assert found, f"{recording.name}: no sessions"
    failures: list[str] = []
    compared = 0
    for session in found:
        try:
            compared += replay(session)
        except Mismatch as exc:
            failures.append(str(exc))
    assert not failures, f"{len(failures)} of {len(found)} sessions differ; first:\n" + "\n".join(
        failures[:3]
    )
    assert compared > 0


def _applied_with_effects(call: dict[str, Any]) -> bool:
    return bool(call["k"] == "apply" and call["out"].get("effects"))


def test_a_changed_effect_is_caught() -> None:
    """The comparison can fail: a recorded call whose effect is altered is reported with its context. The
    session is read only up to its first apply with effects (``first_session_with``), replayed first as
    recorded (the prefix passes: the shortcut compares what the whole session would), then with the effect
    altered."""
    source = RECORDINGS[0]
    session = first_session_with(read_lines(source), source.name, _applied_with_effects)
    call = session.calls[-1]
    assert _applied_with_effects(call)
    assert replay(session) == len(session.calls)
    call["out"]["effects"][0][1] = "tampered"
    with pytest.raises(Mismatch, match=r"first difference at \.effects\[0\]\[1\]"):
        replay(session)


def test_a_changed_state_hash_is_caught() -> None:
    """The state after a call is compared too: a recorded hash altered (its result left as it was) fails."""
    source = RECORDINGS[0]
    session = first_session_with(read_lines(source), source.name, _applied_with_effects)
    session.calls[-1]["h"] = "0" * 20
    with pytest.raises(Mismatch, match="state after the call differs"):
        replay(session)
