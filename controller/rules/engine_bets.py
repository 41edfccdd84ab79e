"""Part of the round engine (controller/rules/engine.py `RoundEngine`): the bets of a round checked against the
profile: limits, co-bettors on a seat (PT-2001 r.13-16, r.28, r.30; MO-2004 art.20). Pure logic, no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.rules.types import (
    RoundError,
    RuleViolation,
    SeatBet,
)

if TYPE_CHECKING:
    from controller.rules.engine import RoundEngine


class BetRules:
    """A part of the round (``RoundEngine`` holds it): checks the round's bets against the profile (limits,
    co-bettors); it changes nothing. It reads the round's state through ``self.r``, the round it was made for."""

    def __init__(self, rnd: RoundEngine) -> None:
        self.r = rnd

    # ------------------------------------------------------------------ set-up

    def validate_bets(self, bets: list[SeatBet]) -> None:
        p = self.r.profile
        if not bets:
            raise RoundError("no bets: a round needs at least one seat with a bet", p.cite("bet_limits"))
        seen: set[int] = set()
        for b in bets:
            where = f"seat {b.seat}"
            if not isinstance(b.seat, int) or isinstance(b.seat, bool) or not 1 <= b.seat <= p.seats:
                # The seats rule (PT-2001 r.2, MO-2004 art.3.1, ...), not the decks rule.
                rule = p.citations.get("seats") or p.cite("deal_order")
                raise RoundError(f"unknown seat {b.seat!r}: {p.name} has seats 1-{p.seats}", rule)
            if b.seat in seen:
                self._validate_co_bet(b, [x for x in bets if x.seat == b.seat])
            seen.add(b.seat)
            if not isinstance(b.amount, int) or isinstance(b.amount, bool):
                raise RoundError(f"{where}: bet must be an integer in minor units, got {b.amount!r}")
            if not p.min_bet <= b.amount <= p.max_bet:
                # Below the minimum breaks the minimum rule (PT-2001 r.14, PT-ONLINE-2015 r.9); above the maximum
                # the rule the book has against it: `above_max` where the book has one apart from the bound on the
                # maximum itself (PT-ONLINE-2015 r.9 "nem superior ao valor máximo"; r.11 bounds the maximum),
                # else `max_bet` (PT-2001 r.37 "O valor máximo de aposta é igual a 30 vezes o valor mínimo").
                rule = p.cite("bet_limits") if b.amount < p.min_bet else p.cite("above_max")
                raise RoundError(
                    f"{where}: bet {b.amount} outside the table limits {p.min_bet}-{p.max_bet}", rule
                )
            if p.multiple_of_min and b.amount % p.min_bet:
                raise RoundError(
                    f"{where}: bet {b.amount} is not a multiple of the minimum {p.min_bet}",
                    p.cite("bet_limits"),
                )
            for name, stake in b.side_bets.items():
                offer = p.side_bets.get(name)
                if offer is None:
                    known = ", ".join(p.side_bets) or "none"
                    raise RoundError(
                        f"{where}: side bet {name!r} not offered by {p.name} (offered: {known})",
                        p.cite("side_bets"),
                    )
                if not isinstance(stake, int) or isinstance(stake, bool) or stake <= 0:
                    raise RoundError(
                        f"{where}: side bet {name} stake must be a positive integer, got {stake!r}"
                    )
                if offer.stake == "half_main" and stake != _half(b.amount, offer.odd_bet):
                    # IT "una puntata pari a metà della puntata iniziale"; an odd main bet has no half in minor
                    # units: refused, or rounded as the house chose (side_bets.<name>.odd_bet)
                    odd = b.amount % 2 and offer.odd_bet == "refuse"
                    raise RoundError(
                        f"{where}: side bet {name} stake {stake} must be half the main bet {b.amount}"
                        + (": an odd main bet has no half in minor units at this table" if odd else ""),
                        p.cite("side_bets"),
                    )
            if b.pair_bet_on is not None:
                self._validate_pair_bet_on(b, {x.seat for x in bets})
            if p.max_side_bets and len(b.side_bets) > p.max_side_bets:
                # MO-2004 art.13: "Para além da aposta inicial e aposta de seguro, o jogador pode ainda fazer
                # uma das seguintes apostas" — one side bet besides the main bet and insurance.
                raise RoundError(
                    f"{where}: {len(b.side_bets)} side bets ({', '.join(sorted(b.side_bets))}); "
                    f"{p.name} allows {p.max_side_bets} besides the main bet and insurance",
                    p.cite("side_bets"),
                )
            if b.jackpot_chip and not p.jackpot_allowed:
                raise RoundError(f"{where}: {p.name} has no progressive jackpot", p.cite("jackpot"))
        if p.round_limit:
            # IT: "La somma delle puntate nel corso di una singola mano non potrà in ogni caso superare il limite
            # stabilito dalla normativa in vigore" — all of one player's bets in the round, every position and
            # side bet included.
            totals: dict[str, int] = {}
            for b in bets:
                who = self._player_key(b)
                totals[who] = totals.get(who, 0) + b.amount + sum(b.side_bets.values())
            for who, total in totals.items():
                if total > p.round_limit:
                    raise RoundError(
                        f"{who}: bets in this round total {total}, above the limit {p.round_limit} "
                        "for one player's bets in a round (every position and side bet counted)",
                        p.cite("round_limit"),
                    )

    def _validate_pair_bet_on(self, b: SeatBet, seats: set[int]) -> None:
        """A pair bet on another player's hands: MO-2004 art.13.1 "Em «qualquer par» de uma ou mais mãos de
        qualquer jogador", where the profile's `side_bets.any_pair.hands` is "any_player"."""
        p, where = self.r.profile, f"seat {b.seat}"
        offer = p.side_bets.get("any_pair")
        if "any_pair" not in b.side_bets or offer is None:
            raise RoundError(f"{where}: pair_bet_on needs an any_pair side bet", p.cite("side_bets"))
        target = b.pair_bet_on
        if target == b.seat:
            return
        if offer.hands != "any_player":
            raise RoundError(
                f"{where}: the any-pair bet is on the bettor's own hand at this table, not seat {target!r}",
                p.cite("side_bets"),
            )
        if target not in seats:
            raise RoundError(
                f"{where}: pair_bet_on seat {target!r} has no bet in this round", p.cite("side_bets")
            )

    def _validate_co_bet(self, b: SeatBet, on_seat: list[SeatBet]) -> None:
        """Several players on one seat: PT-2001 r.15-16, MO-2004 art.20 (at most `table.max_players_per_seat`)."""
        p, where = self.r.profile, f"seat {b.seat}"
        rule = p.cite("multiple_players")
        if p.max_players_per_seat == 1:
            raise RoundError(
                f"{where}: more than one bet for the same seat ({p.name}: one player per seat)", rule
            )
        names = [x.player for x in on_seat]
        if any(n is None for n in names[1:]) or len(set(names)) != len(names):
            raise RoundError(
                f"{where}: several bets on one seat need a different `player` each (the first is the titular's)",
                rule,
            )
        if p.max_players_per_seat and len(on_seat) > p.max_players_per_seat:
            raise RoundError(
                f"{where}: {len(on_seat)} players, at most {p.max_players_per_seat} may bet on one seat", rule
            )
        if p.shared_seat_decides == "highest_bet" and b.amount > on_seat[0].amount:
            # house choice table.shared_seat_decides = "highest_bet": PT-2001 r.16 "A decisão do golpe para todas
            # as apostas feitas nesse lugar cabe ao dono da de valor mais elevado" (MO-2004 art.20.1.3)
            raise RoundError(
                f"{where}: player {b.player!r} bets {b.amount}, more than the first bet {on_seat[0].amount}; the "
                "highest bet decides the play: list it first",
                p.cite("seat_decision"),
            )
        if p.jackpot_chips == "per_seat" and sum(x.jackpot_chip for x in on_seat) > 1:
            # house choice jackpot.chips = "per_seat": r.39's one slot a seat holds one chip (r.47 "uma ficha")
            raise RoundError(
                f"{where}: one jackpot chip a seat at this table; player {b.player!r} would place a second",
                p.cite("jackpot_chips"),
            )
        total = sum(x.amount for x in on_seat)
        if p.seat_total_within_max and total > p.max_bet:
            # PT-2001 r.15: "desde que o valor da aposta ... ou o somatório ... não atinja ainda o máximo"
            raise RoundError(f"{where}: the seat's bets total {total}, above the maximum {p.max_bet}", rule)

    def _player_key(self, b: SeatBet) -> str:
        if b.player is not None:
            return f"player {b.player!r}"
        return "the player" if self.r.profile.single_player else f"seat {b.seat}"

    def _committed(self, who: str) -> int:
        """Everything one player has staked in this round so far (IT round limit)."""
        total = 0
        for st in self.r.seats.values():
            if self._player_key(st.bet) == who:
                total += sum(h.stake for h in st.hands) + st.insurance + sum(st.bet.side_bets.values())
            for cb in st.co_bets:
                if self._player_key(cb.bet) == who:
                    total += cb.bet.amount * (1 + cb.follows_split + len(cb.doubled)) + cb.insurance
                    total += sum(cb.bet.side_bets.values())
        return total

    def over_seat_total(self, seat: int, extra: int) -> RuleViolation | None:
        """House choice bets.seat_total_counts_doubles: PT-2001 r.15 "o somatório da deste e das de outros" kept
        within the maximum as a shared seat's stakes grow by doubles and splits (r.28, r.30)."""
        p, st = self.r.profile, self.r.seats[seat]
        if not p.seat_total_counts_doubles or not st.co_bets:
            return None
        staked = sum(h.stake for h in st.hands)
        staked += sum(cb.bet.amount * (1 + cb.follows_split + len(cb.doubled)) for cb in st.co_bets)
        if staked + extra > p.max_bet:
            return RuleViolation(
                f"seat {seat}: {extra} more would make the seat's stakes {staked + extra}, above the maximum "
                f"{p.max_bet} for all the bets on a seat",
                p.cite("multiple_players"),
            )
        return None

    def over_limits(self, seat: int, extra: int) -> RuleViolation | None:
        """``extra`` more staked on a seat's own hand (a double, a split): within the seat's total (r.15, house
        choice) first, then the player's round limit."""
        return self.over_seat_total(seat, extra) or self.over_round_limit(seat, extra)

    def over_round_limit(self, seat: int, extra: int) -> RuleViolation | None:
        p = self.r.profile
        if not p.round_limit:
            return None
        who = self._player_key(self.r.seats[seat].bet)
        total = self._committed(who) + extra
        if total > p.round_limit:
            return RuleViolation(
                f"{who}: {extra} more would make this round's bets {total}, above the limit {p.round_limit}",
                p.cite("round_limit"),
            )
        return None


def _half(amount: int, odd_bet: str) -> int | None:
    """Half a main bet in minor units; an odd bet's half rounded down or up, or None (refused)."""
    if amount % 2 == 0:
        return amount // 2
    return {"round_down": amount // 2, "round_up": amount // 2 + 1}.get(odd_bet)
