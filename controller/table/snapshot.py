"""The core's snapshot, composed from the concerns' slices (``Concern.snapshot_into``): the format is persisted
in journals in the field, keep it byte for byte (the keys, their order, which are left out while unset)."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

from controller.table.concern import Concern

# The snapshot's keys in their persisted order. Each is given by exactly one concern (the core gives ``state``
# and ``resume_to``, the machine's); ``dealer_on_duty`` and ``players`` only while set (older snapshots and
# journals hold no such key).
SNAPSHOT_KEYS = (
    "state",
    "resume_to",
    "profile",
    "shuffler",
    "device",
    "session",
    "shoe",
    "inside",
    "out",
    "lid",
    "bets",
    "chips",
    "round",
    "round_void",
    "round_no",
    "last_seats",
    "uninserted",
    "faults",
    "pending_replacement",
    "deck_check",
    "outputs",
    "hole_revealed",
    "published",
    "jackpot",
    "dealer_on_duty",
    "players",
)
_KNOWN = frozenset(SNAPSHOT_KEYS)


def slices(machine: dict[str, Any], concerns: Iterable[Concern]) -> dict[str, Any]:
    """The snapshot as plain data, in ``SNAPSHOT_KEYS`` order: ``machine`` (the core's keys) and each concern's
    slice, each in a dict of its own; raises ``RuntimeError`` if two give one key or a key is not in
    ``SNAPSHOT_KEYS``. The core checks its concerns with it once, when built (``check_slices``); every step
    takes the quicker ``ordered``."""
    parts = dict(machine)
    for concern in concerns:
        part: dict[str, Any] = {}
        concern.snapshot_into(part)
        for key in part:
            if key in parts or key not in _KNOWN:
                raise RuntimeError(
                    f"snapshot key {key!r} of {concern.name}: given twice or not in SNAPSHOT_KEYS"
                )
        parts.update(part)
    return {key: parts[key] for key in SNAPSHOT_KEYS if key in parts}


def ordered(machine: dict[str, Any], concerns: Iterable[Concern]) -> dict[str, Any]:
    """As ``slices``, every concern writing into one dict (once per step: the rollback copy of every input); a
    key outside ``SNAPSHOT_KEYS`` still raises ``RuntimeError``."""
    parts = dict(machine)
    for concern in concerns:
        concern.snapshot_into(parts)
    snap = {key: parts[key] for key in SNAPSHOT_KEYS if key in parts}
    if len(snap) != len(parts):
        raise RuntimeError(f"snapshot keys not in SNAPSHOT_KEYS: {sorted(set(parts) - _KNOWN)}")
    return snap


def frozen(machine: dict[str, Any], concerns: Iterable[Concern]) -> bytes:
    """The state, pickled (a deep copy of plain data several times faster than copy.deepcopy)."""
    return pickle.dumps(ordered(machine, concerns), pickle.HIGHEST_PROTOCOL)
