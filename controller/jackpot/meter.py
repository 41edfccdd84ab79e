"""The jackpot meter and reserve pool, kept exactly (PT-2001 r.40, r.43, r.44, r.49, r.50).

Amounts are held in *units* of 1/10,000 of a minor unit: a contribution is ``bet_value x increment_bp`` units,
an exact integer, so a million contributions lose nothing. The display shows whole minor units (floor); the
sub-cent remainder is carried, never dropped.

Every operation is a pure function ``op(state, ...) -> (new_state, MeterRecord)``; the caller journals the
record and the new state (``to_dict``) in one transaction. Invariants (checked by ``check_invariants``):

    meter   == seeded + contributed + reserve_to_meter - paid + corrections
    reserve == reserve_in - reserve_to_meter

The meter never decreases except by a paid hit or an authorised, recorded correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from controller.jackpot import JackpotError
from controller.jackpot.config import BP_DENOMINATOR, METER_MAX, JackpotConfig
from controller.jackpot.hits import Award, Combination, allocate  # hits is the lower module: no import back

UNIT = BP_DENOMINATOR  # units per minor unit: one basis point of one minor unit is exactly one unit


@dataclass(frozen=True, slots=True)
class PendingHit:
    """A frozen award waiting for a supervisor's verification (PT-2001 r.49: the hand stays on the table)."""

    hit_id: int
    round_id: str
    seat: int
    combination: str  # hits.Combination name
    amount: int  # minor units, frozen at the hit
    top: bool  # the 100 % combination (PT-2001 r.43a): paying it resets the meter


@dataclass(frozen=True, slots=True)
class MeterRecord:
    """What an operation did, for the journal. ``data`` holds only JSON-ready values."""

    kind: str  # contribute | correct | reconfigure | freeze | pay | reject | reset
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.data}


@dataclass(frozen=True, slots=True)
class MeterState:
    currency: str
    bet_value: int
    increment_bp: int
    reserve_bp: int
    seed: int
    meter_units: int
    reserve_units: int = 0
    # running totals (units) that make the invariants checkable after any history
    seeded_units: int = 0
    contributed_units: int = 0
    reserve_in_units: int = 0
    reserve_to_meter_units: int = 0
    paid_units: int = 0
    corrections_units: int = 0
    bets: int = 0
    pending: tuple[PendingHit, ...] = ()
    top_paid: bool = False  # a top award of the pending group was paid: reset when the group is settled
    next_hit_id: int = 1
    extra: dict[str, Any] = field(default_factory=dict)  # reserved; round-trips untouched

    # ---- construction and persistence -------------------------------------------------------------------

    @classmethod
    def initial(cls, cfg: JackpotConfig) -> MeterState:
        """A fresh meter at the seed (PT-2001 r.44)."""
        units = cfg.seed * UNIT
        return cls(
            currency=cfg.currency,
            bet_value=cfg.bet_value,
            increment_bp=cfg.increment_bp,
            reserve_bp=cfg.reserve_bp,
            seed=cfg.seed,
            meter_units=units,
            seeded_units=units,
        )

    def to_dict(self) -> dict[str, Any]:
        # The dict ``dataclasses.asdict`` makes (same keys in field order, ``extra`` a deep copy), without its
        # generic recursion: it is part of every input's rollback copy and was most of the core's cost per card.
        d = {name: getattr(self, name) for name in _METER_FIELDS}
        d["pending"] = [{name: getattr(p, name) for name in _HIT_FIELDS} for p in self.pending]
        d["extra"] = deepcopy(self.extra) if self.extra else {}
        return d

    @classmethod
    def from_dict(cls, d: Any) -> MeterState:
        """Rebuild a journaled state; raise ``JackpotError`` naming a bad field or a broken invariant."""
        if not isinstance(d, dict):
            raise JackpotError(f"meter state: expected a dict, got {type(d).__name__}")
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                raise JackpotError(f"meter state.{f.name}: missing")
            value = d[f.name]
            if f.name == "pending":
                if not isinstance(value, list):
                    raise JackpotError("meter state.pending: expected a list")
                try:
                    value = tuple(PendingHit(**p) for p in value)
                except TypeError as exc:
                    raise JackpotError(f"meter state.pending: bad entry ({exc})") from None
            elif f.name == "currency":
                if not isinstance(value, str):
                    raise JackpotError("meter state.currency: expected a string")
            elif f.name == "top_paid":
                if not isinstance(value, bool):
                    raise JackpotError("meter state.top_paid: expected a bool")
            elif f.name == "extra":
                if not isinstance(value, dict):
                    raise JackpotError("meter state.extra: expected a dict")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise JackpotError(f"meter state.{f.name}: expected an integer, got {value!r}")
            kwargs[f.name] = value
        state = cls(**kwargs)
        state.check_invariants()
        return state

    # ---- views ------------------------------------------------------------------------------------------

    @property
    def display_value(self) -> int:
        """What the sign shows: whole minor units (the sub-cent remainder is carried, PT-2001 r.41)."""
        return self.meter_units // UNIT

    @property
    def reserve_value(self) -> int:
        return self.reserve_units // UNIT

    @property
    def ok(self) -> bool:
        """True when the meter may take bets: no hit is waiting for verification (PT-2001 r.49)."""
        return not self.pending

    def flagged_seats(self) -> list[int]:
        """Seats whose winning hand must stay on the table until paid (PT-2001 r.49)."""
        return sorted({p.seat for p in self.pending})

    def check_invariants(self) -> None:
        expected = (
            self.seeded_units
            + self.contributed_units
            + self.reserve_to_meter_units
            - self.paid_units
            + self.corrections_units
        )
        if self.meter_units != expected:
            raise JackpotError(f"meter state: meter_units {self.meter_units} != accounted {expected}")
        if self.reserve_units != self.reserve_in_units - self.reserve_to_meter_units:
            raise JackpotError("meter state: reserve_units does not match reserve_in - reserve_to_meter")
        if self.meter_units < 0 or self.reserve_units < 0:
            raise JackpotError("meter state: negative meter or reserve")


# the plain fields of each (all int, str or bool; ``pending`` and ``extra`` copied apart): to_dict
_HIT_FIELDS = tuple(f.name for f in fields(PendingHit))
_METER_FIELDS = tuple(f.name for f in fields(MeterState))


# ---- operations (pure) ----------------------------------------------------------------------------------


def contribute(state: MeterState, chips: int, round_id: str) -> tuple[MeterState, MeterRecord]:
    """Add ``chips`` jackpot bets collected at "no more bets" (PT-2001 r.41, r.48)."""
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 0:
        raise JackpotError(f"contribute: chips must be a non-negative integer, got {chips!r}")
    if state.pending:
        raise JackpotError(
            "contribute: a hit is pending verification; no jackpot bets until paid (PT-2001 r.49)"
        )
    to_meter = chips * state.bet_value * state.increment_bp
    to_reserve = chips * state.bet_value * state.reserve_bp
    new = replace(
        state,
        meter_units=state.meter_units + to_meter,
        reserve_units=state.reserve_units + to_reserve,
        contributed_units=state.contributed_units + to_meter,
        reserve_in_units=state.reserve_in_units + to_reserve,
        bets=state.bets + chips,
    )
    record = MeterRecord(
        "contribute",
        {
            "round_id": round_id,
            "chips": chips,
            "to_meter_units": to_meter,
            "to_reserve_units": to_reserve,
            "meter": new.display_value,
        },
    )
    return new, record


def correct(state: MeterState, new_value: int, who: str, reason: str) -> tuple[MeterState, MeterRecord]:
    """Set the meter to ``new_value`` minor units: an authorised correction, recorded with who and why."""
    if isinstance(new_value, bool) or not isinstance(new_value, int) or not 0 <= new_value <= METER_MAX:
        raise JackpotError(
            f"correct: new_value must be an integer from 0 to {METER_MAX} (minor units), got {str(new_value)[:40]!r}"
        )
    if not isinstance(who, str) or not who.strip():
        raise JackpotError("correct: who (the authorising supervisor) is required")
    if not isinstance(reason, str) or not reason.strip():
        raise JackpotError("correct: reason is required")
    if state.pending:
        raise JackpotError("correct: a hit is pending verification; settle it first (PT-2001 r.49)")
    delta = new_value * UNIT - state.meter_units
    new = replace(state, meter_units=new_value * UNIT, corrections_units=state.corrections_units + delta)
    record = MeterRecord(
        "correct",
        {
            "who": who,
            "reason": reason,
            "old_units": state.meter_units,
            "new_units": new.meter_units,
            "delta_units": delta,
        },
    )
    return new, record


def reconfigure(
    state: MeterState, cfg: JackpotConfig, *, between_rounds: bool
) -> tuple[MeterState, MeterRecord]:
    """Change bet value / shares / seed (PT-2001 r.40). Only between rounds, never with a hit pending.

    The running meter is not touched (it never decreases by a parameter change); a new seed applies from the
    next reset. The currency cannot change under a running meter.
    """
    if not between_rounds:
        raise JackpotError("reconfigure: jackpot parameters may change only between rounds")
    if state.pending:
        raise JackpotError("reconfigure: a hit is pending verification; settle it first (PT-2001 r.49)")
    if cfg.currency != state.currency:
        raise JackpotError(f"reconfigure: currency cannot change from {state.currency} to {cfg.currency}")
    old = {k: getattr(state, k) for k in ("bet_value", "increment_bp", "reserve_bp", "seed")}
    new = replace(
        state,
        bet_value=cfg.bet_value,
        increment_bp=cfg.increment_bp,
        reserve_bp=cfg.reserve_bp,
        seed=cfg.seed,
    )
    changes = {k: {"old": v, "new": getattr(new, k)} for k, v in old.items() if getattr(new, k) != v}
    return new, MeterRecord("reconfigure", {"changes": changes})


def freeze(state: MeterState, awards: Sequence[Award], round_id: str) -> tuple[MeterState, MeterRecord]:
    """Freeze a round's awards (from ``hits.allocate``) as PENDING until a supervisor verifies them."""
    if state.pending:
        raise JackpotError("freeze: hits of an earlier round are still pending")
    for a in awards:
        if isinstance(a.amount, bool) or not isinstance(a.amount, int) or a.amount < 0:
            raise JackpotError(f"freeze: seat {a.seat}: amount {a.amount!r} is not a non-negative integer")
    total = sum(a.amount for a in awards)
    if total > state.display_value:
        raise JackpotError(f"freeze: awards total {total} exceeds the meter {state.display_value}")
    seats = [a.seat for a in awards]
    if len(set(seats)) != len(seats):
        raise JackpotError("freeze: more than one award for a seat (one jackpot chip per seat, PT-2001 r.47)")
    hits = tuple(
        PendingHit(
            state.next_hit_id + i, round_id, a.seat, a.combination.name, a.amount, a.combination.is_top
        )
        for i, a in enumerate(awards)
    )
    new = replace(state, pending=hits, next_hit_id=state.next_hit_id + len(hits), top_paid=False)
    return new, MeterRecord("freeze", {"round_id": round_id, "hits": [asdict(h) for h in hits]})


def _find(state: MeterState, hit_id: int) -> PendingHit:
    for h in state.pending:
        if h.hit_id == hit_id:
            return h
    raise JackpotError(f"hit {hit_id}: no such pending hit")


def pay(state: MeterState, hit_id: int, supervisor: str) -> tuple[MeterState, list[MeterRecord]]:
    """Supervisor verified hit ``hit_id``: PAID. Smaller prizes are paid first (PT-2001 r.50a).

    When the last pending hit of a round that included a paid top award is settled, the meter resets to the
    seed plus the reserve pool (PT-2001 r.44); the sub-cent remainder stays on the meter.
    """
    if not isinstance(supervisor, str) or not supervisor.strip():
        raise JackpotError("pay: supervisor is required to verify a hit")
    hit = _find(state, hit_id)
    # PT-2001 r.50a: smallest to largest, the top combination (the remainder) last.
    first = [h for h in state.pending if not h.top and (hit.top or h.amount < hit.amount)]
    if first:
        raise JackpotError(f"pay: hit {first[0].hit_id} is smaller and must be paid first (PT-2001 r.50a)")
    units = hit.amount * UNIT
    new = replace(
        state,
        meter_units=state.meter_units - units,
        paid_units=state.paid_units + units,
        pending=tuple(h for h in state.pending if h.hit_id != hit_id),
        top_paid=state.top_paid or hit.top,
    )
    records = [
        MeterRecord("pay", {"hit_id": hit_id, "seat": hit.seat, "amount": hit.amount, "by": supervisor})
    ]
    new, reset_record = _settle(new)
    if reset_record:
        records.append(reset_record)
    return new, records


def reject(
    state: MeterState, hit_id: int, supervisor: str, reason: str
) -> tuple[MeterState, list[MeterRecord]]:
    """Supervisor found hit ``hit_id`` not valid (e.g. misread cards): removed unpaid, meter unchanged."""
    if not isinstance(supervisor, str) or not supervisor.strip():
        raise JackpotError("reject: supervisor is required")
    if not isinstance(reason, str) or not reason.strip():
        raise JackpotError("reject: reason is required")
    hit = _find(state, hit_id)
    new = replace(state, pending=tuple(h for h in state.pending if h.hit_id != hit_id))
    new, reallocated = _reallocate(new)
    data: dict[str, Any] = {"hit_id": hit_id, "seat": hit.seat, "by": supervisor, "reason": reason}
    if reallocated:
        data["reallocated"] = reallocated
    records = [MeterRecord("reject", data)]
    new, reset_record = _settle(new)
    if reset_record:
        records.append(reset_record)
    return new, records


def _reallocate(state: MeterState) -> tuple[MeterState, list[dict[str, Any]]]:
    """After a rejected hit, share the meter again between the hits still pending (PT-2001 r.43a, r.50).

    r.43a pays the top combination "100 % do acumulado ou do respectivo remanescente, após pagos os prémios
    menores": a prize that is rejected is not paid, so it must not be taken off the top winner's remainder
    (nor off a capped group's share). The fixed prizes are unchanged; an amount never goes down (the hits not
    yet paid are re-allocated from the meter as it is now, and every paid hit was paid before them, r.50a).
    """
    if not state.pending:
        return state, []
    winners = [(h.seat, Combination[h.combination]) for h in state.pending]
    amounts = {a.seat: a.amount for a in allocate(state, winners)}
    if any(amounts[h.seat] < h.amount for h in state.pending):
        return state, []  # cannot happen with r.50a order; never take money from a frozen award
    changed = [
        {"hit_id": h.hit_id, "seat": h.seat, "old": h.amount, "new": amounts[h.seat]}
        for h in state.pending
        if amounts[h.seat] != h.amount
    ]
    if not changed:
        return state, []
    pending = tuple(replace(h, amount=amounts[h.seat]) for h in state.pending)
    return replace(state, pending=pending), changed


def _settle(state: MeterState) -> tuple[MeterState, MeterRecord | None]:
    if state.pending or not state.top_paid:
        return state, None
    seed_units = state.seed * UNIT
    moved = state.reserve_units
    new = replace(
        state,
        meter_units=state.meter_units + seed_units + moved,
        seeded_units=state.seeded_units + seed_units,
        reserve_units=0,
        reserve_to_meter_units=state.reserve_to_meter_units + moved,
        top_paid=False,
    )
    record = MeterRecord(
        "reset",
        {
            "carried_units": state.meter_units,
            "seed": state.seed,
            "reserve_units": moved,
            "meter": new.display_value,
        },
    )
    return new, record
