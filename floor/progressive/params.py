"""A link's parameters (docs/progressive.md "Configuration"): what the meter is made of, versioned in
``progressive_params`` and changed only with the link suspended, under dual control (floor/progressive/control.py).

Shares are basis points of the contribution (``increment_bp`` to the meter, ``reserve_bp`` to the reserve,
PT-2001 r.40); amounts are integer minor units; the top combination (PT-2001 r.43a) wins ``top_share_bp`` of the
meter, the others their fixed multiple of the jackpot bet (controller/jackpot/hits.py)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from controller.jackpot.config import BP_DENOMINATOR, CURRENCY_CODE, LINK_NAME, METER_MAX
from controller.jackpot.link_doc import MAX_MEMBERS  # what a table accepts in the meter document

TABLE_NAME = re.compile(
    r"^[A-Za-z0-9_.-]{1,64}\Z"
)  # a table level of the topic tree (floor/common/messages.py)
MAX_BET_VALUE = 1_000_000  # minor units of one jackpot chip


class ParamsError(ValueError):
    """A parameter that is missing or out of range; says which."""


@dataclass(frozen=True, slots=True)
class LinkParams:
    link: str
    site: str
    currency: str
    bet_value: int  # minor units of one jackpot chip
    increment_bp: int  # share of each contribution to the meter
    reserve_bp: int  # share to the reserve (the next reseed)
    base_minor: int  # the seed the meter starts (and is reseeded) at
    limit_minor: int  # the meter's ceiling: increments above it go to the overflow
    top_share_bp: int  # the top combination's share of the meter (PT-2001 r.43a: 10000 = all of it)
    members: tuple[str, ...]  # the enrolled member tables

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["members"] = list(self.members)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> LinkParams:
        if not isinstance(d, dict):
            raise ParamsError("link parameters: expected a table of keys")
        unknown = sorted(set(d) - set(cls.__slots__))
        if unknown:
            raise ParamsError(f"link parameters: unknown key(s) {', '.join(map(str, unknown))}")
        p = cls(
            link=_text(d, "link", LINK_NAME, "[a-z0-9-]{1,32}"),
            site=_text(d, "site", TABLE_NAME, "letters, digits, _ . -"),
            currency=_text(d, "currency", CURRENCY_CODE, "ISO 4217, e.g. EUR"),
            bet_value=_int(d, "bet_value", 1, MAX_BET_VALUE),
            increment_bp=_int(d, "increment_bp", 0, BP_DENOMINATOR),
            reserve_bp=_int(d, "reserve_bp", 0, BP_DENOMINATOR),
            base_minor=_int(d, "base_minor", 0, METER_MAX),
            limit_minor=_int(d, "limit_minor", 1, METER_MAX),
            top_share_bp=_int(d, "top_share_bp", 1, BP_DENOMINATOR, default=BP_DENOMINATOR),
            members=_members(d.get("members")),
        )
        if p.increment_bp + p.reserve_bp > BP_DENOMINATOR:
            raise ParamsError("increment_bp + reserve_bp: more than the whole contribution (10000)")
        if p.limit_minor < p.base_minor:
            raise ParamsError("limit_minor: below base_minor")
        return p


def _text(d: dict[str, Any], key: str, pattern: re.Pattern[str], what: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not pattern.match(value):
        raise ParamsError(f"{key}: expected {what}, got {str(value)[:40]!r}")
    return value


def _int(d: dict[str, Any], key: str, lo: int, hi: int, default: int | None = None) -> int:
    value = d.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParamsError(f"{key}: expected an integer from {lo} to {hi}, got {str(value)[:40]!r}")
    return value


def _members(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_MEMBERS:
        raise ParamsError(f"members: expected a list of 1 to {MAX_MEMBERS} table ids")
    for t in value:
        if not isinstance(t, str) or not TABLE_NAME.match(t):
            raise ParamsError(f"members: {str(t)[:40]!r} is not a table id")
    if len(set(value)) != len(value):
        raise ParamsError("members: a table is named twice")
    return tuple(value)
