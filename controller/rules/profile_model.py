"""The rule profile as typed data: ``Profile`` and its settings (shoe, burns, play, insurance, side bets, prizes),
the errors a profile raises, and the citation keys every profile carries.

Built only by the one parser, controller/rules/profiles.py; everything else reads these frozen objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from controller.rules.errors import RulesError

# Every profile must cite its book for each of these (dealer errors and rule violations carry the citation).
CITATION_KEYS = (
    "decks", "deal_order", "face_up_card", "draw_on_21", "misdeal", "after_double", "split_aces",
    "dealer_draw", "nobody_in_play", "stand", "double", "double_after_split", "split", "resplit", "surrender",
    "insurance", "even_money", "five_card", "bet_limits", "max_bet", "blackjack", "special_prizes",
    "side_bets", "jackpot", "dealer_blackjack",
)  # fmt: skip

# Optional citations (newer situations) and the required one they fall back to.
_CITATION_FALLBACK = {
    "seats": "deal_order",
    "burn": "deal_order",
    "round_limit": "max_bet",
    "multiple_players": "bet_limits",
    "unclaimed_card": "misdeal",
    "above_max": "max_bet",
    "max_hands": "split",
    "insurance_on_blackjack": "even_money",
    "jackpot_chips": "jackpot",
    "seat_decision": "multiple_players",
}
CITATION_OPTIONAL = tuple(_CITATION_FALLBACK)

PRIZE_NAMES = ("six_seven_eight_suited", "three_sevens")


class ProfileError(RulesError, ValueError):
    """A profile that cannot be loaded; the message names the file and the bad key."""


class ProfileSyntaxError(ProfileError):
    """The profile's text is not TOML at all (as opposed to TOML with a bad key)."""


@dataclass(frozen=True)
class BurnPolicy:
    shoe_start: str  # "none" | "one" | "decks"  (PT-2001 r.10, MO-2004 art.4.1)
    per_round: bool  # MO-2004 art.4.2
    before_dealer_second: bool  # MO-2004 art.4.2
    # A round with no burn before its first card where `per_round` burns one (MO-2004 art.4.2 "retirar uma carta
    # no início de cada jogada seguinte"): "accept" (the file left the burn out), or "refuse" (invalid round).
    round_without_burn: str = "accept"


@dataclass(frozen=True)
class ShoePolicy:
    shufflers: tuple[str, ...]  # "manual" | "automatic" | "continuous" | "rng"
    cut_card: str  # "none" | "lowest_seat" (PT-2001 r.8) | "any_player_or_dealer" (MO-2004 art.2.1.1)
    warning_card_from_end: int  # PT-2001 r.9 (50), MO-2004 art.2.1.1 (30 or more); 0 = no warning card
    warning_card_single_player: str  # "middle" (PT-2001 r.9) | "same"
    last_round_on_warning: bool  # PT-2001 r.11, MO-2004 art.2.2.1
    reshuffle_after_any_round: bool = False  # MO-2004 art.2.2.2: the bank may reshuffle after any round


@dataclass(frozen=True)
class PlayRules:
    min_stand_total: int
    double: str  # "9-11" | "any" | "11" | "none"
    double_after_split: bool
    soft_double_ace_fixed: bool
    split_match: str  # "value" | "rank"
    max_hands: int  # 0 = no limit
    resplit_aces: bool
    surrender: bool
    surrender_vs_ace: bool
    five_card_rule: bool
    misdeal_card: str  # "r18" | "reassign"
    face_up_card_invalid: bool
    first_card_face_up_valid: bool
    # MO-2004 art.16.5: "a não ser que, anteriormente, tenha já decidido não separar" (False: a pair value the
    # player once declined to split may not be split later in the round; aces excepted, art.16.3).
    resplit_after_declining: bool = True
    # PT-2001 r.18 ("se nenhum vier a pedir cartas, a dita carta será para o jogo da banca") against r.19 (no
    # card on 17 or more): "void" when the dealer stands, or "dealer" (the card joins the dealer's hand anyway).
    unclaimed_card: str = "void"
    # MO-2004 art.6.1: a card the dealer drew on 17 or more "considera-se inválida e é retirada, podendo, no
    # entanto, considerar-se válida se não tiver sido mostrada": "void" always, or "valid" when not shown.
    unshown_dealer_card: str = "void"
    # When a surrender may be decided: "before_any_draw" (PT-2001 r.36 as clarified, MO-2004 art.18.2: "antes de a
    # banca distribuir qualquer carta adicional"), or "own_turn" (PT-ONLINE-2015 r.15e: one of the decisions a
    # player takes on the first two cards at his turn, whatever was drawn before).
    surrender_moment: str = "before_any_draw"
    # PT-2001 r.28 "poderão os outros jogadores ... fazer também, por seu lado, aposta igual à primeira e anexá-la
    # à segunda aposta do titular": True lets a co-bettor follow the titular's split (MO-2004 art.20 is silent
    # and borrows it); False: his bet stays on the titular's first hand (r.28 "decididas pelo resultado
    # alcançado para a primeira das duas apostas do titular"), a co-bettor's split refused.
    co_bet_follows_split: bool = True
    # MO-2004 art.19 "O jogador que tenha cinco cartas sem exceder 21 pontos": "exactly" five cards, or
    # "at_least" five (a hand of six or more cards not above 21 also has five).
    five_card_count: str = "exactly"

    def five_cards(self, n: int) -> bool:
        """Whether a hand of n cards has the five cards of the five-card rule (MO-2004 art.19)."""
        return n == 5 if self.five_card_count == "exactly" else n >= 5


@dataclass(frozen=True)
class InsuranceRules:
    offered: bool
    min: Fraction  # of the original bet
    max: Fraction
    even_money: bool
    even_money_vs: frozenset[str]  # "A" and/or "T" (ten-value)
    multiple_of_min: bool = False  # PT-2001 r.14 applied to the insurance stake too (house choice)
    # A seat holding a blackjack may insure too (IT "su ciascuna postazione attiva"; PT-2001 r.33 "os jogadores
    # poderão"), or is offered even money only (r.34).
    on_blackjack: bool = True
    # PT-2001 r.15 "Se o titular do lugar fizer «seguro» da sua aposta, os donos das apostas complementares são
    # livres de o fazer, ou não": True reads it as "free whatever the holder does"; False literally, only after
    # the holder insured.
    co_bet_without_holder: bool = True
    # The titular takes even money on his blackjack (PT-2001 r.34, MO-2004 art.10.3): the co-bets on the seat
    # "follow" (paid 1:1 too, r.15 "ficam sujeitos à decisão que for tomada pelo titular"), or stay the
    # "blackjack" they hold (r.34 "Os jogadores que tenham feito black-jack poderão ... optar": their own option).
    co_bet_even_money: str = "follows"
    # An insurance of exactly a fraction of the bet (min = max: IT "pari a metà della puntata iniziale", RO half)
    # on a bet whose fraction is no whole minor unit: "round_down" (half of 101 is 50), "round_up" (51), or
    # "refuse" (the bet cannot be insured).
    odd_bet: str = "round_down"


@dataclass(frozen=True)
class SideBetRule:
    name: str
    stake: str  # "free" | "half_main"
    stake_included: bool  # True: pays N x the stake in total (IT); False: N to 1
    pays: MappingProxyType[str, int]
    each_pair: bool = True  # any_pair: each pair formed after a split pays again (MO-2004 art.13.1.2)
    ace: str = "one"  # over_13 / under_13: the ace counts "one" or "eleven" (MO-2004 art.13.3 vs art.8)
    # any_pair: whose hands the bet may be on: "own" (the bettor's seat only) or "any_player" (MO-2004 art.13.1
    # "Em «qualquer par» de uma ou mais mãos de qualquer jogador": a round file's `pair_bet_on` names the seat).
    hands: str = "own"
    # stake "half_main" on an odd main bet, whose half is no whole minor unit (IT "una puntata pari a metà della
    # puntata iniziale"): "refuse" the side bet, or take the half rounded "round_down" / "round_up".
    odd_bet: str = "refuse"


@dataclass(frozen=True)
class PrizeRules:
    """Who qualifies for the special prizes (PT-2001 r.35, MO-2004 art.15, PT-ONLINE-2015 r.25i)."""

    split_hands: bool = True  # a split hand's three cards qualify
    across_split: bool = False  # the seat's first three cards dealt, split pairs included, also qualify
    after_double: str = "original_bet"  # "original_bet" | "doubled_bet" | "no"
    # A co-bet on the seat (PT-2001 r.15) shares the prize, 3 x its own bet (True), or the prize is the player's
    # "a quem forem distribuídas cartas" only, the titular's (False).
    co_bets: bool = True


@dataclass(frozen=True)
class Profile:
    name: str
    book: str
    title: str
    decks: int
    seats: int
    deal_direction: str  # "ascending" | "descending" seat numbers
    hole_card: bool
    dealer_peek: bool
    shoe: ShoePolicy
    burn: BurnPolicy
    min_bet: int
    max_bet: int
    max_multiple: int
    multiple_of_min: bool
    play: PlayRules
    insurance: InsuranceRules
    blackjack_pays: Fraction
    win_pays: Fraction
    insurance_pays: Fraction
    original_bet_only: str  # "none" | "doubles" (MO-2004 art.10.7)
    special_prizes: MappingProxyType[str, int] = field(hash=False)
    side_bets: MappingProxyType[str, SideBetRule] = field(hash=False)
    jackpot_allowed: bool = False
    # PT-2001 r.47 "a aposta no jackpot é constituída apenas por uma ficha por cada jogador": "per_player" (each
    # player on a seat, co-bettors of r.15 included, may play one chip), or "per_seat" (r.39's one slot per seat:
    # one chip a seat, a second on the same seat refused).
    jackpot_chips: str = "per_player"
    # PT-2001 r.43c/e "ases de naipes diferentes": "not_all_one" (not all of one suit: AH AH AD is three aces of
    # different suits) or "all_different" (every suit different: AH AH AD is not r.43c; its first two cards,
    # AH AH, are then r.43d's two aces of one suit). Read by the jackpot (controller/jackpot/hits.py).
    jackpot_different_suits: str = "not_all_one"
    # PT-2001 r.42 "as primeiras duas, três ou quatro cartas originariamente distribuídas ao jogador, incluindo as
    # correspondentes a pares divididos", in "deal_order" (as dealt: A-A split, then each hand's card) or
    # "hand_order" (the first split hand's cards, then the next hand's).
    jackpot_split_cards: str = "deal_order"
    # No hole card: the dealer takes the second card even when nobody is left in play (MO-2004 art.7.1), instead
    # of stopping at once (PT-2001 r.22).
    dealer_second_card_always: bool = False
    # IT "il banco deve tirare se ha un punteggio inferiore a 17 ... seguendo rigidamente la seguente regola"; RO
    # "Când mâna crupierului este terminată, runda jocului este finalizată": the dealer completes his hand to 17
    # even when nobody is left in play (neither book has PT-2001 r.22).
    dealer_completes_hand: bool = False
    # MO-2004 art.6.1 ("obrigada a tomar cartas quando ... 16 ou inferior") without a PT-2001 r.22: once nobody is
    # left in play, the dealer's draws on 16 or less are not errors (they change no result); on 17 or more they are.
    dealer_draws_with_nobody_in_play: bool = False
    # With a blackjack the only hand left (no other hand in play), the dealer still draws to 17 (his cards then
    # count and change no result) instead of stopping (PT-2001 r.22 reading: nobody left in play).
    dealer_draws_after_blackjack: bool = False
    peek_with_ten: bool = True  # with dealer_peek: also check for blackjack with a ten-value card up
    max_players_per_seat: int = 1  # PT-2001 r.15-16: several (0: no limit); MO-2004 art.20.1.2: three
    # Who decides the play of a shared seat (the first bet a round lists is the decider's): "first_listed" (the
    # table records him: the seated titular, PT-2001 r.15, MO-2004 art.20.1.1), or "highest_bet" (PT-2001 r.16
    # "cabe ao dono da de valor mais elevado", MO-2004 art.20.1.3: a bet above the first one is refused).
    shared_seat_decides: str = "first_listed"
    single_player: bool = False  # online table for one player: every position is that player's (IT, RO)
    round_limit: int = 0  # IT: one player's bets in a round, positions and side bets included (0: none)
    max_side_bets: int = 0  # MO-2004 art.13: side bets per main bet besides insurance (0: no limit)
    # A doubled stake may exceed the table maximum (no book says; PT-2001 r.37 bounds "o valor máximo de aposta"):
    # False lets the double through (the bet was within the limits when placed), True refuses it.
    double_within_max: bool = False
    # Several players on one seat: their bets together stay within the table maximum (PT-2001 r.15 "o somatório da
    # deste e das de outros, não atinja ainda o máximo"; MO-2004 art.20.1.2 caps only the number of players):
    # True caps the seat's total, False only each bet.
    seat_total_within_max: bool = True
    # A shared seat's total (PT-2001 r.15) counted again when its stakes grow: False checks the bets as placed
    # only; True also refuses a double or split (the titular's or a co-bettor's, r.28, r.30) that would take the
    # stakes on a seat with co-bets above the table maximum.
    seat_total_counts_doubles: bool = False
    rounding: str = "down"  # amounts that are not whole minor units: "down" (house's favour) or "up"
    prizes: PrizeRules = field(default_factory=PrizeRules, hash=False)
    citations: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    path: str = ""

    @property
    def continuous_shuffler_allowed(self) -> bool:
        return "continuous" in self.shoe.shufflers

    @property
    def shuffler_kinds(self) -> tuple[str, ...]:
        return self.shoe.shufflers

    def cite(self, key: str) -> str:
        if key in self.citations:
            return self.citations[key]
        return self.citations[_CITATION_FALLBACK[key]]  # an optional situation cites its parent rule

    def seat_order(self, seats: list[int] | set[int]) -> list[int]:
        """Seats in dealing order (PT-2001 r.17: seat-number order; IT deals from the other side)."""
        return sorted(seats, reverse=self.deal_direction == "descending")

    def burn_before_round(self, *, shoe_start: bool) -> int:
        """Cards to burn before a round's first card (PT-2001 r.10, MO-2004 art.4.1-4.2)."""
        n = 0
        if shoe_start:
            n += {"none": 0, "one": 1, "decks": self.decks}[self.burn.shoe_start]
        elif self.burn.per_round:
            n += 1
        return n
