"""The table's side of a linked progressive (docs/jackpot.md "Linked progressive (table side)"): one meter for a
bank of tables, kept by the link's controller on the floor. The table keeps no meter of its own: its jackpot
chips are published as contributions to the link; a hit is reported without an amount (the controller freezes
the prize at the moment it orders the hit); the prize arrives in a signed meter document and is verified and
paid at the table, under the same supervisor actions as a table's own prize (PT-2001 r.49, r.50).

``LinkedJackpot`` owns its slice of ``TableJackpot``'s state (table.py): whether the link is up (an input, on
each transition only: the service watches the documents, controller/service/jackpot_link.py), the hits reported
and awaiting their prize, the hits awarded, the verified and the settled ones. Pure: every hook returns effects
that the shell commits with the input that caused them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot.hits import Combination, evaluate
from controller.jackpot.records import alert, event
from controller.words import COMBINATION_WORDS, money, words

SETTLED_KEPT = 64  # settled hit ids remembered, so a document still listing a paid hit is not awarded twice
LINK_DOWN_FIRST = "waiting for the link's first meter document"
RECORD_STATUS = "jackpot_link"  # journal record of each up/down transition
RECORD_AWARD = "jackpot_link_award"  # journal record of an awarded (or refused) link prize


@dataclass(frozen=True, slots=True)
class LinkAward:
    """A prize the link's controller froze for a hit at this table (an input: journaled, replayed)."""

    hit_id: int
    round_id: str
    seat: int
    combination: str
    amount_minor: int
    order: int


@dataclass(slots=True)
class LinkedHit:
    """A hit at this table: reported (``hit_id`` None, no amount yet) or awarded by the link's controller."""

    round_id: str
    seat: int
    combination: str
    hit_id: int | None = None
    amount: int | None = None
    order: int | None = None
    verified: bool = False

    @property
    def top(self) -> bool:
        return self.combination == Combination.FOUR_ACES_ONE_COLOUR.name


class LinkedJackpot:
    def __init__(self, link: str, data: dict[str, Any] | None = None) -> None:
        d = data or {}
        self.link = link
        self.up: bool = bool(d.get("up", False))
        self.reason: str = str(d.get("reason", LINK_DOWN_FIRST))
        self.seq: int = int(
            d.get("seq", 0)
        )  # the newest document seq journaled (a replay floor after restart)
        self.hits: list[LinkedHit] = [LinkedHit(**h) for h in d.get("hits", [])]
        self.settled: dict[str, str] = dict(d.get("settled", {}))
        self._handlers: dict[str, Callable[[list[Effect], str, dict[str, Any], str], None]] = {
            "jackpot_verify": self._verify,
            "jackpot_pay": self._pay,
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "name": self.link,
            "up": self.up,
            "reason": self.reason,
            "seq": self.seq,
            "hits": [asdict(h) for h in self.hits],
            "settled": dict(self.settled),
        }

    # ================================================================ views
    @property
    def blocking(self) -> str | None:
        """Why linked chips are refused now (None: they are not, as far as the link goes)."""
        if not self.up:
            return f"progressive unavailable: {self.reason}"
        if self.hits:
            return "linked jackpot hit pending verification (PT-2001 r.49)"
        return None

    def doc(self) -> dict[str, Any]:
        """``state/jackpot``'s ``link``: the link's name, whether it is up and why not, the hits awaiting a prize."""
        return {
            "name": self.link,
            "up": self.up,
            "reason": "ok" if self.up else self.reason,
            "awaiting": [
                {"round_id": h.round_id, "seat": h.seat, "combination": h.combination}
                for h in self.hits
                if h.hit_id is None
            ],
        }

    def pending_docs(self) -> list[dict[str, Any]]:
        """The awarded hits as ``state/jackpot.pending_hits`` shows a table's own (r.49: until paid)."""
        return [
            {
                "hit_id": h.hit_id,
                "round_id": h.round_id,
                "seat": h.seat,
                "combination": h.combination,
                "amount": h.amount,
                "top": h.top,
                "verified": h.verified,
            }
            for h in self.hits
            if h.hit_id is not None
        ]

    def flagged_seats(self) -> list[int]:
        return sorted({h.seat for h in self.hits})

    def known(self, hit_id: int) -> bool:
        """The link's hit ``hit_id`` was awarded here already (pending or settled): not to be awarded again."""
        return str(hit_id) in self.settled or any(h.hit_id == hit_id for h in self.hits)

    # ================================================================ inputs
    def on_status(self, up: bool, reason: str, seq: int) -> list[Effect]:
        """The link came up or went down (the service's watch of the meter documents)."""
        fx: list[Effect] = []
        self.seq = max(self.seq, seq)
        if up == self.up and (up or reason == self.reason):
            return fx
        self.up, self.reason = up, ("ok" if up else reason or "no valid meter document")
        fx.append(
            JournalRecord(RECORD_STATUS, {"link": self.link, "up": up, "reason": self.reason, "seq": seq})
        )
        if not up:
            alert(
                fx,
                "jackpot_link",
                "warning",
                f"progressive {self.link} unavailable ({self.reason}): linked jackpot chips refused, the "
                "main game plays on",
                link=self.link,
            )
        return fx

    def contribution(self, round_id: str, seats: list[int], bet_value: int, currency: str) -> list[Effect]:
        """The round's linked chips, published (journaled first) for the link's controller: it adds them once,
        by this event's id, also when the event reaches it later through the floor's archive."""
        fx: list[Effect] = []
        chips = len(seats)
        event(
            fx,
            "contribution",
            link=self.link,
            round_id=round_id,
            seats=seats,
            chips=chips,
            bet_value=bet_value,
            amount_minor=chips * bet_value,
            currency=currency,
        )
        return fx

    def report(self, round_id: str, cards: dict[int, list[str]], different_suits: str) -> list[Effect]:
        """The round's decided cards (PT-2001 r.42, r.43): each winning seat reported to the link without an
        amount (its controller orders the hits and freezes the prizes), flagged until paid (r.49)."""
        fx: list[Effect] = []
        shown = {str(s): c[:4] for s, c in cards.items()}
        fx.append(
            JournalRecord("jackpot_evaluated", {"round_id": round_id, "cards": shown, "link": self.link})
        )
        for seat, seat_cards in sorted(cards.items()):
            combo = evaluate(seat_cards, different_suits)
            if combo is None:
                continue
            self.hits.append(LinkedHit(round_id, seat, combo.name))
            event(
                fx,
                "hit_pending",
                link=self.link,
                round_id=round_id,
                seat=seat,
                combination=combo.name,
                top=combo is Combination.FOUR_ACES_ONE_COLOUR,
                cards=seat_cards[:4],
            )
            alert(
                fx,
                "jackpot_pending",
                "critical",
                f"linked jackpot ({words(COMBINATION_WORDS, combo.name)}) on seat {seat}: the prize is frozen "
                f"by the link {self.link}; the hand stays on the table until a supervisor verifies and pays it "
                "(PT-2001 r.49)",
                seat=seat,
                round_id=round_id,
                link=self.link,
                rule="PT-2001 r.49",
            )
        return fx

    def award(self, a: LinkAward, currency: str) -> list[Effect]:
        """A signed meter document lists a prize for a hit at this table: it becomes payable here. One that
        matches no reported hit is refused (journaled, alerted), never paid."""
        fx: list[Effect] = []
        if self.known(a.hit_id):
            return fx
        hit = next(
            (h for h in self.hits if h.hit_id is None and (h.round_id, h.seat) == (a.round_id, a.seat)), None
        )
        why = ""
        if hit is None:
            why = f"no hit reported on seat {a.seat} in round {a.round_id}"
        elif hit.combination != a.combination:
            why = f"the link says {a.combination}, the table evaluated {hit.combination}"
        data = {"link": self.link, **asdict(a)}
        if why:
            self._remember(a.hit_id, f"refused ({why})")
            fx.append(JournalRecord(RECORD_AWARD, {**data, "refused": why}))
            alert(fx, "jackpot_link", "critical", f"link {self.link} prize {a.hit_id} refused: {why}",
                  link=self.link, hit_id=a.hit_id)  # fmt: skip
            return fx
        assert hit is not None
        hit.hit_id, hit.amount, hit.order = a.hit_id, a.amount_minor, a.order
        fx.append(JournalRecord(RECORD_AWARD, data))
        alert(
            fx,
            "jackpot_pending",
            "critical",
            f"linked jackpot on seat {a.seat}: {money(a.amount_minor, currency)} frozen by the link {self.link} "
            f"(hit {a.hit_id}); a supervisor verifies and pays it (PT-2001 r.49)",
            hit_id=a.hit_id,
            seat=a.seat,
            amount=a.amount_minor,
            round_id=a.round_id,
            link=self.link,
            rule="PT-2001 r.49",
        )
        return fx

    # ================================================================ the supervisor
    def act(self, action: str, user: str, args: dict[str, Any], currency: str) -> list[Effect]:
        handler = self._handlers.get(action)
        if handler is None:
            raise Rejected(f"{action}: the link's controller {self.link} keeps the meter, not this table")
        fx: list[Effect] = []
        handler(fx, user, args, currency)
        return fx

    def _hit(self, args: dict[str, Any]) -> LinkedHit:
        hit_id = args.get("hit_id")
        if isinstance(hit_id, bool) or not isinstance(hit_id, int):
            raise Rejected(f"hit_id must be an integer (a pending jackpot hit, PT-2001 r.49), got {hit_id!r}")
        for h in self.hits:
            if h.hit_id == hit_id:
                return h
        if str(hit_id) in self.settled:
            raise Rejected(f"jackpot hit {hit_id} was already {self.settled[str(hit_id)]} (PT-2001 r.49)")
        awaiting = [f"seat {h.seat}" for h in self.hits if h.hit_id is None]
        pending = [h.hit_id for h in self.hits if h.hit_id is not None]
        more = f"; awaiting the link's prize: {', '.join(awaiting)}" if awaiting else ""
        raise Rejected(
            f"no pending linked jackpot hit {hit_id} (pending: {pending or 'none'}{more}; PT-2001 r.49)"
        )

    def _verify(self, fx: list[Effect], user: str, args: dict[str, Any], currency: str) -> None:
        hit = self._hit(args)
        if hit.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} is already verified: pay it (PT-2001 r.49)")
        valid = args.get("valid", True)
        if not isinstance(valid, bool):
            raise Rejected(f"valid must be true or false, got {valid!r}")
        common = {
            "link": self.link,
            "hit_id": hit.hit_id,
            "seat": hit.seat,
            "round_id": hit.round_id,
            "by": user,
        }
        if valid:
            hit.verified = True
            fx.append(JournalRecord("jackpot_verified", dict(common)))
            event(fx, "verified", **common)
            return
        reason = str(args.get("reason") or "")
        if not reason:
            raise Rejected(f"jackpot hit {hit.hit_id}: a rejection needs a reason")
        self.hits.remove(hit)
        assert hit.hit_id is not None
        self._remember(hit.hit_id, f"rejected by {user}")
        fx.append(JournalRecord("jackpot_rejected", {**common, "reason": reason}))
        event(fx, "rejected", **common, reason=reason)

    def _pay(self, fx: list[Effect], user: str, args: dict[str, Any], currency: str) -> None:
        hit = self._hit(args)
        assert hit.hit_id is not None and hit.amount is not None and hit.order is not None
        if not hit.verified:
            raise Rejected(f"jackpot hit {hit.hit_id} must be verified by a supervisor first (PT-2001 r.49)")
        # PT-2001 r.50a: within a round, in the order the link's controller set (smallest first, the top last)
        before = [
            h for h in self.hits if h.round_id == hit.round_id and h is not hit
            and (h.order is None or h.order < hit.order)
        ]  # fmt: skip
        if before:
            seats = ", ".join(f"seat {h.seat}" for h in before)
            raise Rejected(
                f"jackpot hit {hit.hit_id}: pay {seats} first, in the link's order (PT-2001 r.50a)"
            )
        if "amount" in args:
            amount = args["amount"]
            if isinstance(amount, bool) or not isinstance(amount, int) or amount != hit.amount:
                raise Rejected(
                    f"jackpot hit {hit.hit_id}: amount {amount!r} (minor units) is not the award of "
                    f"{money(hit.amount, currency)} frozen by the link {self.link} (PT-2001 r.43, r.50)"
                )
        self.hits.remove(hit)
        self._remember(hit.hit_id, f"paid by {user}")
        data = {"link": self.link, "hit_id": hit.hit_id, "seat": hit.seat, "round_id": hit.round_id,
                "amount_minor": hit.amount, "by": user}  # fmt: skip
        fx.append(JournalRecord("jackpot_link_paid", dict(data)))
        event(fx, "paid", **data)

    def _remember(self, hit_id: int, what: str) -> None:
        self.settled[str(hit_id)] = what
        while len(self.settled) > SETTLED_KEPT:
            del self.settled[next(iter(self.settled))]
