"""The checkpoint records a journal must hold by its own rules (controller/journal/checkpointer.py), checked by
``tablectl journal verify`` (issue 27 §4): a verification with the table's key alone cannot tell a journal whose
checkpoint records were all deleted (and the hash chain recomputed) from one that never had any, unless it knows
where the table is bound to have written one:

- **round ends**: a checkpoint record follows every ``round_settled`` / ``round_void`` before the next
  ``round_started`` (the table signs its head right after a round ends: the next round starts long after);
- **the cadence**: while records are written, a checkpoint record at least every ``interval_s`` (the
  ``[audit] checkpoint_interval_s``, 60 s by default): a record written more than ``interval_s`` (plus a
  ``GRACE_S`` for a loaded machine) after the first record the last checkpoint did not cover needs a checkpoint
  record between them.

A ``restart`` input (the service started again) excuses what the process before it did not sign: a kill -9 or a
power loss takes the unsigned tail with it, and the new process starts its own interval; for the cadence, so
does a silence longer than the interval (the service may have been stopped: a tool such as ``journal prune`` or
the next start writes after it). The unsigned tail at the end of the journal is not required (see
docs/security.md, "Not defended"). Timestamps are the journal's own: someone who rewrites them as well can
spread records out; the round-end rule does not depend on them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from controller.journal.checkpointer import INTERVAL_S, ROUND_END_KINDS
from controller.journal.records import CHECKPOINT_KIND, Record

GRACE_S = 30.0  # a checkpoint is written right after the commit that asks for it; this is a loaded machine
ROUND_START_KIND = "round_started"
INPUT_KIND = "input"
RESTART_INPUT = "restart"


@dataclass(frozen=True, slots=True)
class MissingCheckpoint:
    seq: int  # the record that should not have been written without a checkpoint record before it
    reason: str


def _is_restart(rec: Record) -> bool:
    inp = rec.data.get("input") if rec.kind == INPUT_KIND else None
    return isinstance(inp, dict) and inp.get("type") == RESTART_INPUT


def missing_checkpoint(records: Iterable[Record], interval_s: float = INTERVAL_S) -> MissingCheckpoint | None:
    """The first place where the journal lacks a checkpoint record its rules require; None: none lacks one."""
    round_end: Record | None = None  # a round end not yet followed by a checkpoint record
    first_unsigned: Record | None = None  # the first record after the last checkpoint record
    last_signed_ts: float | None = None  # when the last checkpoint record (or the process) began its interval
    prev_ts: float | None = None
    for rec in records:
        silence = prev_ts is not None and rec.ts - prev_ts > interval_s + GRACE_S
        prev_ts = rec.ts
        if rec.kind == CHECKPOINT_KIND:
            round_end, first_unsigned, last_signed_ts = None, None, rec.ts
            continue
        if _is_restart(rec):  # a new process: what the old one left unsigned is excused
            round_end, first_unsigned, last_signed_ts = None, None, rec.ts
        elif silence:  # perhaps stopped meanwhile: whoever writes now starts its own interval
            first_unsigned, last_signed_ts = None, rec.ts
        if first_unsigned is None:
            first_unsigned = rec
            if last_signed_ts is None:
                last_signed_ts = rec.ts
        due = max(last_signed_ts + interval_s, first_unsigned.ts) if last_signed_ts is not None else rec.ts
        if rec.ts > due + GRACE_S:
            return MissingCheckpoint(
                rec.seq,
                f"no checkpoint record between record {first_unsigned.seq} and record {rec.seq}, written "
                f"{rec.ts - first_unsigned.ts:.0f} s later: the table signs its head at least every "
                f"{interval_s:g} s while it writes (checkpoint records deleted?)",
            )
        if rec.kind == ROUND_START_KIND and round_end is not None:
            return MissingCheckpoint(
                rec.seq,
                f"no checkpoint record between the round end at record {round_end.seq} ({round_end.kind}) and "
                f"the next round's start at record {rec.seq}: the table signs its head at every round end "
                "(checkpoint records deleted?)",
            )
        if rec.kind in ROUND_END_KINDS:
            round_end = rec
    return None
