"""The link's meter, reserve and overflow, kept exactly in units of 1/10,000 of a minor unit (pure, no I/O).

Every operation is a function ``op(meter, params, ...) -> (new meter, what it did)``; floor/progressive/engine.py
writes the new meter and the record in the transaction of the change. Invariants (``check``, and the same as
constraints of ``progressive_links``)::

    meter    == seeded + contributed + reserve_moved + overflow_moved - prizes + returned + corrections
    reserve  == reserve_in - reserve_moved
    overflow == overflow_in - overflow_moved

- **contribute**: ``amount x increment_bp`` units to the meter (the part above ``limit_minor`` to the overflow),
  ``amount x reserve_bp`` units to the reserve (PT-2001 r.40, r.41).
- **hit**: the prizes of one table's round (PT-2001 r.43, r.50: smaller prizes first, the top combination takes
  ``top_share_bp`` of what remains, tied top winners share it; controller/jackpot/hits.py ``allocate``) frozen off
  the meter at the moment the controller orders them. A top prize reseeds at once: the base again, then the
  overflow, then the reserve, each up to the limit (PT-2001 r.44). A fixed prize that takes the meter below the
  base tops it up to the base from the overflow, then the reserve.
- **reject**: a hit the table found not to be a win gives its frozen amount back to the meter.
- **correct**: an authorised correction (dual control), recorded with its delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from controller.jackpot import JackpotError
from controller.jackpot.config import BP_DENOMINATOR
from controller.jackpot.hits import Award, Combination, allocate
from controller.jackpot.meter import UNIT
from floor.progressive.params import LinkParams


class MeterError(ValueError):
    """An operation the meter refuses (bad amount, a broken invariant); says why."""


@dataclass(frozen=True, slots=True)
class Meter:
    meter_units: int
    reserve_units: int = 0
    overflow_units: int = 0
    seeded_units: int = 0
    contributed_units: int = 0
    reserve_in_units: int = 0
    reserve_moved_units: int = 0
    overflow_in_units: int = 0
    overflow_moved_units: int = 0
    prizes_units: int = 0
    returned_units: int = 0
    corrections_units: int = 0

    @classmethod
    def initial(cls, params: LinkParams) -> Meter:
        """A new link's meter at its base (PT-2001 r.44)."""
        units = params.base_minor * UNIT
        return cls(meter_units=units, seeded_units=units)

    @property
    def meter_minor(self) -> int:
        """What the signs show: whole minor units (the sub-unit remainder is carried, never dropped)."""
        return self.meter_units // UNIT

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Meter:
        kwargs = {}
        for f in fields(cls):
            value = d.get(f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise MeterError(f"meter.{f.name}: expected an integer, got {value!r}")
            kwargs[f.name] = value
        meter = cls(**kwargs)
        meter.check()
        return meter

    def check(self) -> None:
        accounted = (
            self.seeded_units
            + self.contributed_units
            + self.reserve_moved_units
            + self.overflow_moved_units
            - self.prizes_units
            + self.returned_units
            + self.corrections_units
        )
        if self.meter_units != accounted:
            raise MeterError(f"meter_units {self.meter_units} != accounted {accounted}")
        if self.reserve_units != self.reserve_in_units - self.reserve_moved_units:
            raise MeterError("reserve_units != reserve_in - reserve_moved")
        if self.overflow_units != self.overflow_in_units - self.overflow_moved_units:
            raise MeterError("overflow_units != overflow_in - overflow_moved")
        if min(self.meter_units, self.reserve_units, self.overflow_units) < 0:
            raise MeterError("a negative meter, reserve or overflow")


@dataclass(frozen=True, slots=True)
class Shares:
    """Where one contribution went, in units."""

    to_meter: int
    to_reserve: int
    to_overflow: int


@dataclass(frozen=True, slots=True)
class Prize:
    """One frozen prize of a hit (a seat of one table's round)."""

    seat: int
    combination: Combination
    amount_minor: int
    capped: bool


@dataclass(frozen=True, slots=True)
class Reseed:
    """What a reseed put on the meter, in units."""

    base: int
    from_overflow: int
    from_reserve: int


def _amount(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MeterError(f"{what}: expected a non-negative integer, got {str(value)[:40]!r}")
    return value


def contribute(meter: Meter, params: LinkParams, amount_minor: int) -> tuple[Meter, Shares]:
    """Add one contribution of ``amount_minor`` (chips x bet value): its shares to the meter (up to the limit,
    the rest to the overflow) and to the reserve."""
    amount = _amount(amount_minor, "contribute: amount_minor")
    increment = amount * params.increment_bp  # units: amount x UNIT x bp / 10,000 (UNIT == 10,000)
    room = max(0, params.limit_minor * UNIT - meter.meter_units)
    to_meter = min(increment, room)
    shares = Shares(to_meter, amount * params.reserve_bp, increment - to_meter)
    new = replace(
        meter,
        meter_units=meter.meter_units + shares.to_meter,
        contributed_units=meter.contributed_units + shares.to_meter,
        reserve_units=meter.reserve_units + shares.to_reserve,
        reserve_in_units=meter.reserve_in_units + shares.to_reserve,
        overflow_units=meter.overflow_units + shares.to_overflow,
        overflow_in_units=meter.overflow_in_units + shares.to_overflow,
    )
    return new, shares


@dataclass(frozen=True, slots=True)
class _Pot:
    """What ``allocate`` reads: the meter's whole minor units and the jackpot bet."""

    display_value: int
    bet_value: int


def prizes(meter: Meter, params: LinkParams, winners: Sequence[tuple[int, Combination]]) -> list[Prize]:
    """The prizes of one table's round at this meter (PT-2001 r.43, r.50; controller/jackpot/hits.py
    ``allocate``), the top combination's remainder scaled to ``top_share_bp``, in payment order."""
    try:
        awards: list[Award] = allocate(_Pot(meter.meter_minor, params.bet_value), winners)
    except JackpotError as exc:
        raise MeterError(str(exc)) from None
    tops = [a for a in awards if a.combination.is_top]
    if tops and params.top_share_bp != BP_DENOMINATOR:
        pool = sum(a.amount for a in tops) * params.top_share_bp // BP_DENOMINATOR
        base, odd = divmod(pool, len(tops))  # the odd minor units one each, lowest seat first (r.50b)
        scaled = {
            a.seat: base + (1 if i < odd else 0) for i, a in enumerate(sorted(tops, key=lambda a: a.seat))
        }
        awards = [
            Award(a.seat, a.combination, scaled[a.seat], a.capped) if a.combination.is_top else a
            for a in awards
        ]
    return [Prize(a.seat, a.combination, a.amount, a.capped) for a in awards]


def hit(
    meter: Meter, params: LinkParams, winners: Sequence[tuple[int, Combination]]
) -> tuple[Meter, list[Prize], Reseed | None]:
    """Freeze one table's round of hits off the meter, then reseed (a top prize) or top up to the base."""
    won = prizes(meter, params, winners)
    total = sum(p.amount_minor for p in won) * UNIT
    new = replace(meter, meter_units=meter.meter_units - total, prizes_units=meter.prizes_units + total)
    if any(p.combination.is_top for p in won):
        new, reseed = _reseed(new, params, base=params.base_minor * UNIT)
        return new, won, reseed
    short = params.base_minor * UNIT - new.meter_units
    if short > 0:
        new, reseed = _reseed(new, params, base=0, up_to=params.base_minor * UNIT)
        return new, won, reseed if (reseed.from_overflow or reseed.from_reserve) else None
    return new, won, None


def _reseed(meter: Meter, params: LinkParams, *, base: int, up_to: int | None = None) -> tuple[Meter, Reseed]:
    """The base put on, then the overflow, then the reserve moved onto the meter, up to ``up_to`` (the limit)."""
    ceiling = params.limit_minor * UNIT if up_to is None else up_to
    units = meter.meter_units + base
    from_overflow = min(meter.overflow_units, max(0, ceiling - units))
    units += from_overflow
    from_reserve = min(meter.reserve_units, max(0, ceiling - units))
    new = replace(
        meter,
        meter_units=units + from_reserve,
        seeded_units=meter.seeded_units + base,
        overflow_units=meter.overflow_units - from_overflow,
        overflow_moved_units=meter.overflow_moved_units + from_overflow,
        reserve_units=meter.reserve_units - from_reserve,
        reserve_moved_units=meter.reserve_moved_units + from_reserve,
    )
    return new, Reseed(base, from_overflow, from_reserve)


def reject(meter: Meter, amount_minor: int) -> Meter:
    """A hit the table's verification found no win: its frozen amount back on the meter."""
    units = _amount(amount_minor, "reject: amount_minor") * UNIT
    return replace(meter, meter_units=meter.meter_units + units, returned_units=meter.returned_units + units)


def correct(meter: Meter, new_minor: int) -> tuple[Meter, int]:
    """Set the meter to ``new_minor`` whole minor units (the sub-unit remainder kept); returns the delta (units)."""
    target = _amount(new_minor, "correct: new value") * UNIT + meter.meter_units % UNIT
    delta = target - meter.meter_units
    return replace(meter, meter_units=target, corrections_units=meter.corrections_units + delta), delta
