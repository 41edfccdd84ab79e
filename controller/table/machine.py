"""The table's state machine: the one authority on where the table is and which input it accepts now.

The states are nested (``transitions.extensions.nesting.HierarchicalMachine``): ``active`` holds ``loading``,
``open`` (the shoe cycle and the round phases) and ``closing``; ``faults`` is the fault sub-machine. A transition
from ``active`` or ``faults`` applies to every state inside it. The core names the leaf state only (``closed``,
``betting``, ``jammed``): that is the name in snapshots and state documents; ``PATH`` maps it to the nested one.

The machine, not the core, decides:
- which inputs the table accepts now: the core asks ``may_<trigger>()`` (``TableCore.may_trigger(name)``) and
  refuses with ``refusal()``; inputs that do not change the state are internal transitions (``dest=None``);
- the guards (``Guard``: a condition and the refusal's reason);
- ``resume_to``: remembered when a fault interrupts an active state (``before``), moved by a round phase that
  completes during the fault (internal transitions of ``faults``), used by ``resume`` (one conditional
  transition per resumable state) and forgotten when the table leaves the fault sub-machine (``on_exit``).

``diagram.py`` draws docs/state-machine.md from the machine as built (``build_machine``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from transitions.extensions.nesting import HierarchicalMachine, NestedState, NestedTransition

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

SEPARATOR = "."  # state names contain "_", the library's default separator


class TableState(NestedState):
    separator = SEPARATOR


# The nesting (the names inside are the leaf states above).
TREE: list[Any] = [
    "closed",
    {"name": "active", "children": ["loading", {"name": "open", "children": OPEN_STATES}, "closing"]},
    "deck_check_failed",
    {"name": "faults", "children": FAULT_STATES},
]


def _paths(tree: list[Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree:
        name = node if isinstance(node, str) else node["name"]
        out[name] = prefix + name
        if isinstance(node, dict):
            out.update(_paths(node["children"], prefix + name + SEPARATOR))
    return out


PATH: dict[str, str] = _paths(
    TREE
)  # a state or group name -> its nested name ("betting" -> "active.open.betting")
LEAF: dict[str, str] = {path: name for name, path in PATH.items()}  # and back


@dataclass(frozen=True, slots=True)
class Guard:
    """A condition on a transition, with the reason the input is refused when it does not hold."""

    name: str  # shown on the diagram
    ok: Callable[[Any], bool]
    refusal: Callable[[Any], str]


def _service_faults(model: Any) -> list[str]:
    return [f for f in SERVICE_FAULTS if f in model.faults]


NO_SERVICE_FAULT = Guard(
    "no journal_io / integrity fault",
    lambda model: not _service_faults(model),
    lambda model: (
        f"open_table refused: the table is in the {', '.join(_service_faults(model))} fault: "
        + "; ".join(str(model.faults[f].reason) for f in _service_faults(model))
    ),
)
NO_BETS = Guard(
    "no bets on the table",
    lambda model: not model.bets,
    lambda model: "bets are on the table: clear them before closing",
)
CLOSABLE = ("loading", "betting", "cut", "settled", "cards_returned")
BETWEEN_ROUNDS = (*CLOSABLE, "shuffling")  # no round being dealt or played
SESSION_CLOSED = "the table is closed: players are seated and unseated only while a session is open"
IN_SESSION = Guard(
    "a session is open",
    lambda model: model.resume_to != "closing",  # a fault during the closing: the session has ended
    lambda model: SESSION_CLOSED,
)
NO_ROUND_INTERRUPTED = Guard(
    "no round interrupted",
    lambda model: model.resume_to in CLOSABLE,
    lambda model: f"the interrupted round ({model.resume_to}) must be voided first (void_round)",
)


@dataclass(frozen=True, slots=True)
class T:
    trigger: str
    source: str | tuple[str, ...]  # a state, a group name, or several
    dest: str | None  # None: an internal transition (an input the state accepts, no state change)
    label: str = ""  # the rule or condition, shown on the diagram
    guards: tuple[Guard, ...] = ()
    resume: str | None = None  # internal transition of ``faults``: sets ``resume_to`` to this


TRANSITIONS: list[T] = [
    T("open_table", "closed", "loading", "supervisor open_table", (NO_SERVICE_FAULT,)),
    T("loaded", "loading", "cut", "batch shoe shuffled, decks x 52 cards"),
    T("loaded_continuous", "loading", "betting", "continuous: >= 2 packets, decks x 52 (r.53-54)"),
    T("cut_done", "cut", "betting", "cut by seat or inspector (r.8)"),
    T("place_bet", "betting", None, "dealer place_bet (r.13)"),
    T("clear_bet", "betting", None, "dealer clear_bet"),
    T("jackpot_chip", "betting", None, "dealer jackpot_chip (r.41b, r.45, r.47)"),
    T("close_bets", "betting", "no_more_bets", "no more bets (jackpot chips collected, r.48)"),
    T("start_deal", "no_more_bets", "dealing"),
    T("play", ("players", "dealing"), None, "dealer decisions (hit, stand, double, split, insurance...)"),
    T("initial_dealt", "dealing", "players", "initial deal complete"),
    T("to_dealer", ("dealing", "players"), "dealer", "players done"),
    T("settle", ("dealing", "players", "dealer"), "settled", "round complete"),
    T("void", tuple(ROUND_ACTIVE), "settled", "void: bets returned (PT-ONLINE r.27-28)"),
    T("cards_in", "settled", "cards_returned", "DiscardInserted, lid opened (r.59)"),
    T("next_round", ("settled", "cards_returned"), "betting", "next_round (r.61 carry if lid stayed shut)"),
    T("reshuffle", ("settled", "cards_returned"), "shuffling", "warning/cut card seen (r.11)"),
    T("dealer_sign_in", BETWEEN_ROUNDS, None, "dealer signs in (dealer on duty, between rounds)"),
    T("seat_player", ("loading", "open", "faults"), None, "player_in / player_out (issue 41)", (IN_SESSION,)),
    T("shuffled", "shuffling", "cut", "ShuffleFinished"),
    T("close_table", CLOSABLE, "closing", "supervisor close_table", (NO_BETS,)),
    T("deck_ok", "closing", "closed", "deck check complete (r.55)"),
    T("deck_bad", "closing", "deck_check_failed", "missing/extra/duplicate card (r.55)"),
    T("ack_deck_check", "deck_check_failed", "closed", "supervisor ack_deck_check"),
    T("run_deck_check", ("closed", "closing", "deck_check_failed"), None, "supervisor run_deck_check (r.55)"),
    T("jam", ("active", "faults"), "jammed", "Jammed (r.51)"),
    T("link_lost", ("active", "faults"), "link_down", "LinkDown"),
    T("forced", ("active", "faults"), "tamper", "lid forced open (r.60)"),
    T("journal_failed", ("active", "faults"), "journal_io", "a journal write failed (disk full, read-only)"),
    T("integrity_failed", ("active", "faults"), "integrity", "journal chain, snapshot or pinned config bad"),
    T(
        "integrity_close",
        "integrity",
        "closing",
        "supervisor close_table (the session ends)",
        (NO_ROUND_INTERRUPTED,),
    ),
    T("sequence_fault", ("active", "faults"), "shoe_sequence", "shoe_seq repeated or out of order"),
    T("count_fault", ("active", "faults"), "card_count", "a card code more often than the decks hold"),
    T(
        "fault_cleared",
        ("jammed", "link_down", "tamper", "journal_io", "shoe_sequence", "card_count"),
        "resync",
        "authorised clear (clear_jam, clear_link, lock_lid, clear_journal_io, clear_shoe_fault): count cards inside",
    ),
    T("restarted", "active", "resync", "service restarted: lid locked, count cards inside"),
    T("restarted", "resync", None, "service restarted during the resync: count again"),
    T("resume", "resync", "active", "counts agree (else round void)"),
    # A card delivered late during a fault completes a round phase: the table resumes in the next phase.
    T("initial_dealt", "faults", None, "during a fault: resume in players", resume="players"),
    T("to_dealer", "faults", None, "during a fault: resume in dealer", resume="dealer"),
    T("settle", "faults", None, "during a fault: resume in settled", resume="settled"),
    T("void", "faults", None, "during a fault: resume in settled", resume="settled"),
    # The round's cards went in while the table was in a fault or counting after a restart (the lid was open):
    # the lid cycle goes on from there (PT-2001 r.59, r.62), the table resumes with the cards returned.
    T("cards_in", "faults", None, "during a fault: resume in cards_returned", resume="cards_returned"),
]


# Why an input is refused in a state, where the generic "not allowed in state" would not say enough.
STATE_REFUSALS: dict[tuple[str, str], str] = {
    ("open_table", "deck_check_failed"): "the last deck check failed: acknowledge it first (PT-2001 r.55)",
    **{("seat_player", state): SESSION_CLOSED for state in ("closed", "closing", "deck_check_failed")},
}


def _single(source: str | tuple[str, ...]) -> str:
    """The one state of a transition that has one source (a fault's resume, ``resume`` itself)."""
    if not isinstance(source, str):
        raise TypeError(f"one source state expected, got {source!r}")
    return source


def expand(source: str | tuple[str, ...]) -> list[str]:
    names = (source,) if isinstance(source, str) else source
    out: list[str] = []
    for name in names:
        for state in GROUPS.get(name, [name]):
            if state not in out:
                out.append(state)
    return out


def _sources(t: T) -> list[str]:
    return [t.source] if isinstance(t.source, str) else list(t.source)


def refusal(model: Any, trigger: str, action: str) -> str:
    """Why ``trigger`` may not fire now (``may_<trigger>()`` said no): the states it needs, or its guard."""
    state = model.state
    special = STATE_REFUSALS.get((trigger, state))
    if special is not None:
        return special
    ts = [t for t in TRANSITIONS if t.trigger == trigger and t.resume is None]
    for t in ts:
        if state in expand(t.source):
            for guard in t.guards:
                if not guard.ok(model):
                    return guard.refusal(model)
    needs = " or ".join(_sources(ts[0]))
    return f"{action} is not allowed in state {state} (needs {needs})"


class TableTransition(NestedTransition):
    """A transition that keeps its rule and guards for the diagram (diagram.py draws the built machine)."""

    def __init__(self, *args: Any, label: str = "", guard: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.label = label
        self.guard = guard


class TableMachine(HierarchicalMachine):
    state_cls = TableState
    transition_cls = TableTransition

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._may: dict[tuple[str, str], list[NestedTransition]] = {}
        super().__init__(*args, **kwargs)

    def add_transition(self, *args: Any, **kwargs: Any) -> None:
        self._may.clear()
        super().add_transition(*args, **kwargs)

    def _can_trigger(self, model: Any, trigger: str, *args: Any, **kwargs: Any) -> bool:
        """``may_<trigger>()``: the library's answer (the transitions held for the state, then for each state
        it is nested in, the first whose conditions hold), with the transitions to try looked up once per
        state and trigger: the core asks several times per input."""
        path = getattr(model, self.model_attribute)
        candidates = self._may.get((trigger, path))
        if candidates is None:
            candidates = self._may[(trigger, path)] = self._candidates(trigger, path)
        return any(
            all(cast(Callable[..., bool], c.func)(*args, **kwargs) == c.target for c in t.conditions)
            for t in candidates
        )

    def _candidates(self, trigger: str, path: str) -> list[NestedTransition]:
        event = self.events.get(trigger)
        if event is None:
            return []
        parts = path.split(SEPARATOR)
        out: list[NestedTransition] = []
        while parts:
            out += cast(list[NestedTransition], event.transitions.get(SEPARATOR.join(parts), []))
            parts.pop()
        return out

    def set_state(self, state: Any, model: Any = None) -> None:
        """Also by the leaf name a snapshot stores ("betting")."""
        super().set_state(PATH.get(state, state) if isinstance(state, str) else state, model)


def build_machine(model: Any) -> TableMachine:
    """The machine on ``model`` (its nested state in ``model.machine_state``; ``model.state`` the leaf name)."""

    def remember(*_a: Any, **_k: Any) -> None:
        model.resume_to = model.state  # the state the fault interrupts

    def forget(*_a: Any, **_k: Any) -> None:
        model.resume_to = None

    def cond(guard: Guard) -> Callable[..., bool]:
        return lambda *_a, **_k: guard.ok(model)

    transitions: list[dict[str, Any]] = []
    for t in TRANSITIONS:
        conditions = [cond(g) for g in t.guards]
        if t.resume is not None:  # a round phase completed during a fault: the table resumes after it
            normal = next(n for n in TRANSITIONS if n.trigger == t.trigger and n.resume is None)
            resumable = expand(normal.source)
            transitions.append(
                {
                    "trigger": t.trigger,
                    "source": PATH[_single(t.source)],
                    "dest": None,
                    "conditions": [lambda *a, _s=resumable, **k: model.resume_to in _s],
                    "after": [lambda *a, _to=t.resume, **k: setattr(model, "resume_to", _to)],
                    "label": t.label,
                    "guard": f"resume_to in {', '.join(resumable)}",
                }
            )
            continue
        if t.trigger == "resume":
            for target in RESUMABLE:
                transitions.append(
                    {
                        "trigger": "resume",
                        "source": PATH[_single(t.source)],
                        "dest": PATH[target],
                        "conditions": [lambda *a, _t=target, **k: model.resume_to == _t],
                        "label": t.label,
                        "guard": f"resume_to = {target}",
                    }
                )
            # nowhere to resume to (no interrupted state known): stay, forget it
            transitions.append(
                {"trigger": "resume", "source": PATH[_single(t.source)], "dest": None, "after": [forget]}
            )
            continue
        into_fault = t.dest in FAULT_STATES
        for source in _sources(t):
            transitions.append(
                {
                    "trigger": t.trigger,
                    "source": PATH[source],
                    "dest": PATH[t.dest] if t.dest is not None else None,
                    "conditions": conditions,
                    # entering the fault sub-machine from an active state: remember where to resume
                    "before": [remember] if into_fault and source not in (*FAULT_STATES, "faults") else [],
                    "label": t.label,
                    "guard": ", ".join(g.name for g in t.guards),
                }
            )
    states = _with_callbacks(TREE, {"faults": {"on_exit": [forget]}})
    return TableMachine(
        model=model,
        states=states,
        transitions=transitions,
        initial=PATH["closed"],
        auto_transitions=False,
        model_attribute="machine_state",
    )


def _with_callbacks(tree: list[Any], callbacks: dict[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for node in tree:
        if isinstance(node, str):
            out.append({"name": node, **callbacks.get(node, {})})
        else:
            out.append(
                {
                    "name": node["name"],
                    "children": _with_callbacks(node["children"], callbacks),
                    **callbacks.get(node["name"], {}),
                }
            )
    return out
