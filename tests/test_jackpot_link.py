"""A table on a linked progressive (docs/jackpot.md "Linked progressive (table side)"): the configuration, the
signed meter document's check (controller/jackpot/link_doc.py; property tests: any change to a signed document,
any other key, any older seq is refused) and the table's side in the pure core (controller/jackpot/linked.py):
contributions and hits for the link, the link's prize verified and paid under PT-2001 r.49-50, linked chips
refused while the link is down. Every jackpot document and event is checked against its strict schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.jackpot import BET, CFG, jackpot_messages_valid  # noqa: F401 (fixture)
from support.link_docs import LINK, LinkSigner, meter_doc

from controller.effects import Rejected
from controller.jackpot import JackpotError
from controller.jackpot.config import DEFAULT_LINK_TIMEOUT_S, JackpotConfig
from controller.jackpot.link_doc import MAX_BYTES, LinkDocRefused, LinkStatus, Refusal, verify
from controller.jackpot.table import TableJackpot
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import TableCore
from controller.table.messages import messages
from controller.terminal.pit_panels import link_text
from drivers import events as ev
from tablebench.table_testing import Harness

SIGNER = LinkSigner()
LINKED_CFG = {
    "enabled": True,
    "mode": "manual",
    "bet_value": BET,
    "currency": "EUR",
    "link": LINK,
    "link_public_key": SIGNER.public_hex,
}

pytestmark = pytest.mark.usefixtures("jackpot_messages_valid")


# ---- configuration -------------------------------------------------------------------------------------------


def test_a_linked_section_has_no_meter_of_its_own() -> None:
    cfg = JackpotConfig.from_dict(LINKED_CFG)
    assert cfg.linked and cfg.timeout_s == DEFAULT_LINK_TIMEOUT_S
    assert JackpotConfig.from_dict(cfg.to_dict()) == cfg  # journaled with open_table, read back the same
    assert "seed" not in cfg.to_dict()
    for key, value in (("seed", 1_000_000), ("increment_bp", 7000), ("correction_confirm_s", 300)):
        with pytest.raises(JackpotError, match=f"jackpot.{key}: not with a link"):
            JackpotConfig.from_dict({**LINKED_CFG, key: value})
    with pytest.raises(JackpotError, match=r"jackpot\.link:"):
        JackpotConfig.from_dict({**LINKED_CFG, "link": "Bank A"})
    with pytest.raises(JackpotError, match="link_public_key"):
        JackpotConfig.from_dict({**LINKED_CFG, "link_public_key": "zz"})
    with pytest.raises(JackpotError, match="link_timeout_s"):
        JackpotConfig.from_dict({**LINKED_CFG, "link_timeout_s": 1})
    with pytest.raises(JackpotError, match="only with a link"):
        JackpotConfig.from_dict({**CFG, "link_public_key": SIGNER.public_hex})
    assert "link" not in JackpotConfig.from_dict(CFG).to_dict()  # the table's own meter: as before


# ---- the meter document's check --------------------------------------------------------------------------


def test_a_signed_document_is_accepted_and_read() -> None:
    raw = SIGNER.sign(meter_doc(seq=7, meter_units=12_345_678_9999, pending=[SIGNER.hit(3, "T1", "r-1", 2)]))
    doc = verify(raw, link=LINK, public_key=SIGNER.public, last_seq=6)
    assert (doc.seq, doc.meter_minor, doc.status) == (7, 12_345_678, LinkStatus.RUNNING)
    assert [h.hit_id for h in doc.hits_for("T1")] == [3] and doc.hits_for("T2") == ()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"x" * (MAX_BYTES + 1), Refusal.TOO_LARGE),
        (b"{not json", Refusal.NOT_JSON),
        (b"[1, 2]", Refusal.SHAPE),
        (SIGNER.sign({**meter_doc(seq=1), "extra": 1}), Refusal.SHAPE),
        (LinkSigner().sign(meter_doc(seq=1)), Refusal.BAD_SIGNATURE),  # the attacker's own key
        (SIGNER.sign(meter_doc(seq=1, link="bank-b")), Refusal.WRONG_LINK),
        (SIGNER.sign(meter_doc(seq=5)), Refusal.REPLAYED),  # seq 5 after 5
        (SIGNER.sign(meter_doc(seq=6, meter_units=-1)), Refusal.SHAPE),
        (SIGNER.sign(meter_doc(seq=6, meter_minor=3)), Refusal.SHAPE),  # disagrees with meter_units
        (SIGNER.sign(meter_doc(seq=6, status="paused")), Refusal.SHAPE),
    ],
)
def test_forged_or_bad_documents_are_refused_with_the_reason(raw: bytes, reason: Refusal) -> None:
    with pytest.raises(LinkDocRefused) as exc:
        verify(raw, link=LINK, public_key=SIGNER.public, last_seq=5)
    assert exc.value.reason is reason


@settings(max_examples=200, deadline=None)
@given(
    seq=st.integers(min_value=1, max_value=2**40),
    meter=st.integers(min_value=0, max_value=10**15 * 10_000 - 1),
    field=st.sampled_from(["seq", "meter_units", "meter_minor", "status", "currency", "members", "pending"]),
    data=st.data(),
)
def test_any_change_to_a_signed_document_is_refused(seq: int, meter: int, field: str, data: Any) -> None:
    """Property: the signature covers every field: whatever an attacker changes after signing is refused."""
    doc = json.loads(SIGNER.sign(meter_doc(seq=seq, meter_units=meter)))
    tampered = {
        "seq": seq + data.draw(st.integers(min_value=1, max_value=10)),
        "meter_units": meter + data.draw(st.integers(min_value=1, max_value=10**8)),
        "meter_minor": doc["meter_minor"] + 1,
        "status": "suspended",
        "currency": "USD",
        "members": [*doc["members"], "T9"],
        "pending": [{"hit_id": 1, "table": "T1", "round_id": "r", "seat": 1, "combination": "TWO_ACES_MIXED",
                     "amount_minor": 10**12, "order": 1}],
    }[field]  # fmt: skip
    doc[field] = tampered
    with pytest.raises(LinkDocRefused) as exc:
        verify(json.dumps(doc).encode(), link=LINK, public_key=SIGNER.public, last_seq=None)
    assert exc.value.reason in (Refusal.BAD_SIGNATURE, Refusal.SHAPE)


@settings(max_examples=100, deadline=None)
@given(seqs=st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=30))
def test_only_a_newer_seq_is_accepted(seqs: list[int]) -> None:
    """Property: a document is accepted iff its seq is above every seq accepted before (no replay)."""
    last: int | None = None
    for seq in seqs:
        raw = SIGNER.sign(meter_doc(seq=seq))
        if last is None or seq > last:
            assert verify(raw, link=LINK, public_key=SIGNER.public, last_seq=last).seq == seq
            last = seq
        else:
            with pytest.raises(LinkDocRefused, match="replayed"):
                verify(raw, link=LINK, public_key=SIGNER.public, last_seq=last)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_junk_never_crashes_the_check(raw: bytes) -> None:
    with pytest.raises(LinkDocRefused):
        verify(raw, link=LINK, public_key=SIGNER.public, last_seq=None)


# ---- the table's side, in the pure core ------------------------------------------------------------------


def linked_table(up: bool = True) -> Harness:
    h = Harness()
    h.core = TableCore(load_profile, jackpot=TableJackpot())
    h.sup("open_table", profile="pt-2001", shuffler="continuous", jackpot=LINKED_CFG)
    total = h.core.tp.total_cards
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(total // 2))
    h.dev(ev.DiscardInserted(total - total // 2))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(total))
    h.apply(inputs.JackpotDisplay(True))
    if up:
        h.apply(inputs.JackpotLink(True, "", 1))
    return h


def jp(h: Harness) -> TableJackpot:
    assert isinstance(h.core.jackpot, TableJackpot)
    return h.core.jackpot


def events(h: Harness, action: str) -> list[dict[str, Any]]:
    return [e.data for e in messages(h.effects) if e.topic == "events/jackpot" and e.data["action"] == action]


def state(h: Harness) -> dict[str, Any]:
    return [e.data for e in messages(h.effects) if e.topic == "state/jackpot"][-1]


def round_with_chips(h: Harness, seats: list[int]) -> str:
    for seat in (1, 3):
        h.dealer("place_bet", seat=seat, amount=500)
    for seat in seats:
        h.dealer("jackpot_chip", seat=seat)
    return str(h.dealer("no_more_bets").result["round_id"])


def award(h: Harness, round_id: str, seat: int, hit_id: int = 41, amount: int = 2500, **kw: Any) -> None:
    h.apply(inputs.LinkHitAwarded(LINK, hit_id, round_id, seat, kw.get("combination", "TWO_ACES_MIXED"),
                                  amount, kw.get("order", 1)))  # fmt: skip


def test_contribution_goes_to_the_link_not_to_a_meter_of_the_table() -> None:
    h = linked_table()
    rid = round_with_chips(h, [1, 3])
    (c,) = events(h, "contribution")
    assert c == {"action": "contribution", "link": LINK, "round_id": rid, "seats": [1, 3], "chips": 2,
                 "bet_value": BET, "amount_minor": 2 * BET, "currency": "EUR"}  # fmt: skip
    assert jp(h).meter is None and jp(h).meter_units() is None  # no meter of its own: one chip, one meter
    assert state(h)["link"] == {"name": LINK, "up": True, "reason": "ok", "awaiting": []}


def test_a_hit_is_reported_without_amount_then_paid_as_the_link_froze_it_pt2001_r49() -> None:
    h = linked_table()
    rid = round_with_chips(h, [1])
    h.card("5C"), h.card("AH"), h.card("8D"), h.card("9S"), h.card("AS"), h.card("9D"), h.card("7D")
    h.dealer("stand")
    (hp,) = events(h, "hit_pending")
    assert hp["link"] == LINK and hp["seat"] == 1 and hp["combination"] == "TWO_ACES_MIXED"
    assert "amount" not in hp and "hit_id" not in hp  # the link's controller freezes the prize
    assert state(h)["link"]["awaiting"] == [{"round_id": rid, "seat": 1, "combination": "TWO_ACES_MIXED"}]
    assert state(h)["playable"] is False  # r.49: the winning hand stays until paid
    with pytest.raises(Rejected, match="awaiting the link's prize: seat 1"):
        h.sup("jackpot_verify", hit_id=41)
    award(h, rid, 1, amount=2500)
    want = {"hit_id": 41, "round_id": rid, "seat": 1, "combination": "TWO_ACES_MIXED", "amount": 2500,
            "top": False, "verified": False}  # fmt: skip
    assert state(h)["pending_hits"] == [want]
    award(h, rid, 1, amount=9999)  # the same hit id again (the next heartbeat): nothing changes
    assert state(h)["pending_hits"][0]["amount"] == 2500
    with pytest.raises(Rejected, match="verified by a supervisor first"):
        h.sup("jackpot_pay", hit_id=41)
    h.sup("jackpot_verify", hit_id=41)
    with pytest.raises(Rejected, match="not the award"):
        h.sup("jackpot_pay", hit_id=41, amount=2600)
    h.sup("jackpot_pay", user="inspector-rui", hit_id=41, amount=2500)
    (paid,) = events(h, "paid")
    assert paid == {"action": "paid", "link": LINK, "hit_id": 41, "seat": 1, "round_id": rid,
                    "amount_minor": 2500, "by": "inspector-rui"}  # fmt: skip
    with pytest.raises(Rejected, match="already paid by inspector-rui"):
        h.sup("jackpot_pay", hit_id=41)
    award(h, rid, 1)  # a document still listing the paid hit: never paid twice
    assert state(h)["pending_hits"] == [] and state(h)["playable"] is True


def test_a_rejected_link_hit_is_published_for_the_link() -> None:
    h = linked_table()
    rid = round_with_chips(h, [1])
    h.card("5C"), h.card("AH"), h.card("8D"), h.card("9S"), h.card("AS"), h.card("9D"), h.card("7D")
    h.dealer("stand")
    award(h, rid, 1)
    h.sup("jackpot_verify", hit_id=41, valid=False, reason="card misread by the reader")
    (rej,) = events(h, "rejected")
    assert (rej["link"], rej["hit_id"], rej["reason"]) == (LINK, 41, "card misread by the reader")


def test_a_prize_for_no_reported_hit_is_refused_and_alerted() -> None:
    h = linked_table()
    rid = round_with_chips(h, [1])
    award(h, rid, 3, hit_id=77)
    assert state(h)["pending_hits"] == []
    assert any(r.get("refused") for r in h.records("jackpot_link_award"))
    with pytest.raises(Rejected, match="already refused"):
        h.sup("jackpot_verify", hit_id=77)


def test_pay_follows_the_links_order_within_a_round_pt2001_r50a() -> None:
    h = linked_table()
    rid = round_with_chips(h, [1, 3])
    for code in ("5C", "AH", "AS", "9S", "AD", "AC", "7D"):  # seat 1 AH AD, seat 3 AS AC
        h.card(code)
    while h.core.state == "players":
        h.dealer("stand")
    award(h, rid, 1, hit_id=50, amount=2500, order=2)
    award(h, rid, 3, hit_id=51, amount=2500, order=1)  # the link ordered seat 3's first
    h.sup("jackpot_verify", hit_id=50)
    h.sup("jackpot_verify", hit_id=51)
    with pytest.raises(Rejected, match="pay seat 3 first"):
        h.sup("jackpot_pay", hit_id=50)
    h.sup("jackpot_pay", hit_id=51)
    h.sup("jackpot_pay", hit_id=50)
    assert [p["hit_id"] for p in events(h, "paid")] == [51, 50]


def test_link_down_refuses_linked_chips_and_the_game_plays_on() -> None:
    h = linked_table()
    h.apply(inputs.JackpotLink(False, "no valid meter document for 15 s", 9))
    s = state(h)
    assert s["playable"] is False and "progressive unavailable" in s["reason"]
    h.dealer("place_bet", seat=1, amount=500)
    with pytest.raises(Rejected, match="progressive unavailable: no valid meter document"):
        h.dealer("jackpot_chip", seat=1)  # manual mode (PT-2001 r.41b): the dealer is told why
    h.dealer("no_more_bets")  # the main game deals on
    assert h.core.state == "dealing" and events(h, "contribution") == []
    assert [r["up"] for r in h.records("jackpot_link")] == [True, False]
    h.apply(inputs.JackpotLink(False, "no valid meter document for 15 s", 10))  # no transition: nothing
    assert len(h.records("jackpot_link")) == 2


def test_a_restart_waits_for_a_document_and_remembers_the_seq() -> None:
    h = linked_table()
    h.apply(inputs.JackpotLink(True, "", 42))  # no transition, the seq is kept
    h.apply(inputs.Restart())
    assert jp(h).linked is not None and not jp(h).linked.up and jp(h).linked.seq == 42
    snap = h.core.snapshot()
    again = TableJackpot()
    again.restore(snap["jackpot"])
    assert again.snapshot() == jp(h).snapshot()


def test_without_a_link_the_snapshot_has_no_link_key() -> None:
    t = TableJackpot()
    assert "link" not in t.snapshot()
    with pytest.raises(Rejected, match="no link"):
        t.on_link(True, "", 1)


def test_the_pit_terminal_says_why_linked_chips_are_refused() -> None:
    h = linked_table()
    assert "accepted" in link_text(state(h))[0]
    h.apply(inputs.JackpotLink(False, "no valid meter document for 15 s", 3))
    text, style = link_text(state(h))
    assert text == (
        "progressive bank-a: linked chips REFUSED: progressive unavailable: no valid meter document for 15 s"
    )
    assert style == "bold red"


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("link"), st.booleans()),
            st.tuples(st.just("round"), st.lists(st.sampled_from([1, 3]), unique=True)),
        ),
        max_size=8,
    )
)
def test_linked_chips_are_taken_exactly_while_the_link_is_up(steps: list[tuple[str, Any]]) -> None:
    """Property (PT-2001 r.41, r.47): whatever the order of link transitions and rounds, a chip is collected and
    published for the link iff the link is up when it is placed, and each collected chip is published once."""
    h = linked_table(up=False)
    up, expected, seq = False, 0, 0
    for kind, arg in steps:
        if kind == "link":
            seq += 1
            h.apply(inputs.JackpotLink(arg, "" if arg else "no valid meter document for 15 s", seq))
            up = arg
            continue
        for seat in (1, 3):
            h.dealer("place_bet", seat=seat, amount=500)
        for seat in arg:
            if up:
                h.dealer("jackpot_chip", seat=seat)
                expected += 1
            else:
                with pytest.raises(Rejected, match="progressive unavailable"):
                    h.dealer("jackpot_chip", seat=seat)
        h.dealer("no_more_bets")
        for code in ("5C", "KH", "9D", "8S", "7H", "TD", "6C"):  # no aces: no hit
            if h.core.round.engine.expected_recipient() is None:
                break
            h.card(code)
        while h.core.state == "players":
            h.dealer("stand")
        while h.core.state == "dealer":
            h.card("TC")
        h.lid_cycle()
        h.dealer("next_round")
    published = events(h, "contribution")
    assert sum(c["chips"] for c in published) == expected
    assert all(c["amount_minor"] == c["chips"] * BET and c["link"] == "bank-a" for c in published)
    assert len({c["round_id"] for c in published}) == len(published)
