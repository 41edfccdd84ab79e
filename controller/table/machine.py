"""The table's states and transitions as data: the core builds its ``transitions.Machine`` from these lists
and ``diagram.py`` draws docs/state-machine.md from the same lists, so the diagram cannot drift from the code.

A source may name a group ("open", "active") instead of a state; ``build_machine`` expands it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transitions import Machine

SESSION_STATES = ["closed", "loading", "closing", "deck_check_failed"]
# Inside an open session: the shoe cycle and the round phases (PT-2001 r.8-11, r.13-22, r.58-62).
OPEN_STATES = [
    "cut",  # batch shoe: waiting for the cut after a shuffle (PT-2001 r.8)
    "betting",
    "no_more_bets",
    "dealing",
    "players",
    "dealer",
    "settled",  # result final; continuous: waiting for the lid cycle, record contestable (r.59-62)
    "cards_returned",
    "shuffling",  # batch shoe: reshuffle after the last round of the shoe (r.11)
]
# journal_io: a journal write failed (disk full or read-only); integrity: the journal chain, a snapshot or the
# configuration pinned by the open session does not check out (issue 13 §1-2, issue 14 item 3).
# shoe_sequence / card_count: a card frame that cannot be a card the shoe dealt (issue 13 §5).
FAULT_STATES = [
    "jammed",
    "link_down",
    "tamper",
    "journal_io",
    "integrity",
    "resync",
    "shoe_sequence",
    "card_count",
]
SERVICE_FAULTS = ("journal_io", "integrity")  # detected by the service itself, not reported by the shoe
STATES = SESSION_STATES + OPEN_STATES + FAULT_STATES

ROUND_ACTIVE = [
    "no_more_bets",
    "dealing",
    "players",
    "dealer",
]  # a round with cards on the table, not settled
GROUPS: dict[str, list[str]] = {
    "open": OPEN_STATES,
    # everything a fault can interrupt (the shoe is in use)
    "active": ["loading", *OPEN_STATES, "closing"],
    "faults": FAULT_STATES,
}
RESUMABLE = GROUPS["active"]


@dataclass(frozen=True, slots=True)
class T:
    trigger: str
    source: str | tuple[str, ...]  # a state, a group name, or several
    dest: str
    label: str = ""  # the rule or condition, shown on the diagram


TRANSITIONS: list[T] = [
    T("open_table", "closed", "loading", "supervisor open_table"),
    T("loaded", "loading", "cut", "batch shoe shuffled, decks x 52 cards"),
    T("loaded_continuous", "loading", "betting", "continuous: >= 2 packets, decks x 52 (r.53-54)"),
    T("cut_done", "cut", "betting", "cut by seat or inspector (r.8)"),
    T("close_bets", "betting", "no_more_bets", "no more bets (jackpot chips collected, r.48)"),
    T("start_deal", "no_more_bets", "dealing"),
    T("initial_dealt", "dealing", "players", "initial deal complete"),
    T("to_dealer", ("dealing", "players"), "dealer", "players done"),
    T("settle", ("dealing", "players", "dealer"), "settled", "round complete"),
    T("void", tuple(ROUND_ACTIVE), "settled", "void: bets returned (PT-ONLINE r.27-28)"),
    T("cards_in", "settled", "cards_returned", "DiscardInserted, lid opened (r.59)"),
    T("next_round", ("settled", "cards_returned"), "betting", "next_round (r.61 carry if lid stayed shut)"),
    T("reshuffle", ("settled", "cards_returned"), "shuffling", "warning/cut card seen (r.11)"),
    T("shuffled", "shuffling", "cut", "ShuffleFinished"),
    T(
        "close_table",
        ("loading", "betting", "cut", "settled", "cards_returned"),
        "closing",
        "supervisor close_table",
    ),
    T("deck_ok", "closing", "closed", "deck check complete (r.55)"),
    T("deck_bad", "closing", "deck_check_failed", "missing/extra/duplicate card (r.55)"),
    T("ack_deck_check", "deck_check_failed", "closed", "supervisor ack_deck_check"),
    T("jam", ("active", "faults"), "jammed", "Jammed (r.51)"),
    T("link_lost", ("active", "faults"), "link_down", "LinkDown"),
    T("forced", ("active", "faults"), "tamper", "lid forced open (r.60)"),
    T("journal_failed", ("active", "faults"), "journal_io", "a journal write failed (disk full, read-only)"),
    T("integrity_failed", ("active", "faults"), "integrity", "journal chain, snapshot or pinned config bad"),
    T("integrity_close", "integrity", "closing", "supervisor close_table (the session ends)"),
    T("sequence_fault", ("active", "faults"), "shoe_sequence", "shoe_seq repeated or out of order"),
    T("count_fault", ("active", "faults"), "card_count", "a card code more often than the decks hold"),
    T(
        "fault_cleared",
        ("jammed", "link_down", "tamper", "journal_io", "shoe_sequence", "card_count"),
        "resync",
        "authorised clear (clear_jam, clear_link, lock_lid, clear_journal_io, clear_shoe_fault): count cards inside",
    ),
    T("restarted", "active", "resync", "service restarted: lid locked, count cards inside"),
    T("resume", "resync", "active", "counts agree (else round void)"),
]


FAULT_TRIGGERS = (
    "jam",
    "link_lost",
    "forced",
    "journal_failed",
    "integrity_failed",
    "sequence_fault",
    "count_fault",
)  # re-entered while in it


def expand(source: str | tuple[str, ...]) -> list[str]:
    names = (source,) if isinstance(source, str) else source
    out: list[str] = []
    for name in names:
        for state in GROUPS.get(name, [name]):
            if state not in out:
                out.append(state)
    return out


def build_machine(model: Any) -> Machine:
    """A ``transitions`` machine on ``model``; ``resume`` goes back to ``model.resume_to``."""
    transitions: list[dict[str, Any]] = []
    for t in TRANSITIONS:
        if t.trigger == "resume":
            for target in RESUMABLE:
                transitions.append(
                    {
                        "trigger": "resume",
                        "source": "resync",
                        "dest": target,
                        "conditions": [lambda *a, _t=target, **k: model.resume_to == _t],
                    }
                )
            continue
        sources = [s for s in expand(t.source) if s != t.dest or t.trigger in FAULT_TRIGGERS]
        transitions.append({"trigger": t.trigger, "source": sources, "dest": t.dest})
    return Machine(
        model=model,
        states=STATES,
        transitions=transitions,
        initial="closed",
        auto_transitions=False,
        model_attribute="state",
    )
