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

from controller.table.machine_names import TableState, Trigger

# The names are enums (machine_names.py); the library is given their texts. Short aliases in this module only.
S = TableState
Tr = Trigger

SESSION_STATES = [S.CLOSED, S.LOADING, S.CLOSING, S.DECK_CHECK_FAILED]
# Inside an open session: the shoe cycle and the round phases (PT-2001 r.8-11, r.13-22, r.58-62).
OPEN_STATES = [
    S.CUT,  # batch shoe: waiting for the cut after a shuffle (PT-2001 r.8)
    S.BETTING,
    S.NO_MORE_BETS,
    S.DEALING,
    S.PLAYERS,
    S.DEALER,
    S.SETTLED,  # result final; continuous: waiting for the lid cycle, record contestable (r.59-62)
    S.CARDS_RETURNED,
    S.SHUFFLING,  # batch shoe: reshuffle after the last round of the shoe (r.11)
]
# journal_io: a journal write failed (disk full or read-only); integrity: the journal chain, a snapshot or the
# configuration pinned by the open session does not check out (issue 13 §1-2, issue 14 item 3).
# shoe_sequence / card_count: a card frame that cannot be a card the shoe dealt (issue 13 §5).
FAULT_STATES = [
    S.JAMMED,
    S.LINK_DOWN,
    S.TAMPER,
    S.JOURNAL_IO,
    S.INTEGRITY,
    S.RESYNC,
    S.SHOE_SEQUENCE,
    S.CARD_COUNT,
]
SERVICE_FAULTS = (S.JOURNAL_IO, S.INTEGRITY)  # detected by the service itself, not reported by the shoe
STATES: list[TableState] = SESSION_STATES + OPEN_STATES + FAULT_STATES

ROUND_ACTIVE = [
    S.NO_MORE_BETS,
    S.DEALING,
    S.PLAYERS,
    S.DEALER,
]  # a round with cards on the table, not settled
# The groups of the nesting (not states: a transition from a group applies to every state inside it).
ACTIVE = "active"
OPEN = "open"
FAULTS = "faults"
GROUPS: dict[str, list[TableState]] = {
    OPEN: OPEN_STATES,
    # everything a fault can interrupt (the shoe is in use)
    ACTIVE: [S.LOADING, *OPEN_STATES, S.CLOSING],
    FAULTS: FAULT_STATES,
}
RESUMABLE = GROUPS[ACTIVE]

SEPARATOR = "."  # state names contain "_", the library's default separator


class TableNode(NestedState):
    """A state of the nested machine (the library's class, with this machine's separator)."""

    separator = SEPARATOR


# The nesting (the names inside are the leaf states above).
TREE: list[Any] = [
    S.CLOSED,
    {"name": ACTIVE, "children": [S.LOADING, {"name": OPEN, "children": OPEN_STATES}, S.CLOSING]},
    S.DECK_CHECK_FAILED,
    {"name": FAULTS, "children": FAULT_STATES},
]


def _paths(tree: list[Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree:
        name = str(node if isinstance(node, str) else node["name"])  # the plain text (the library's name)
        out[name] = prefix + name
        if isinstance(node, dict):
            out.update(_paths(node["children"], prefix + name + SEPARATOR))
    return out


PATH: dict[str, str] = _paths(
    TREE
)  # a state or group name -> its nested name ("betting" -> "active.open.betting")
LEAF: dict[str, TableState] = {PATH[state]: state for state in STATES}  # a leaf's nested name -> its state
NAME: dict[str, str] = {path: name for name, path in PATH.items()}  # also a group's (the diagram)


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
CLOSABLE = (S.LOADING, S.BETTING, S.CUT, S.SETTLED, S.CARDS_RETURNED)
BETWEEN_ROUNDS = (*CLOSABLE, S.SHUFFLING)  # no round being dealt or played
SESSION_CLOSED = "the table is closed: players are seated and unseated only while a session is open"
IN_SESSION = Guard(
    "a session is open",
    lambda model: model.resume_to != S.CLOSING,  # a fault during the closing: the session has ended
    lambda model: SESSION_CLOSED,
)
NO_ROUND_INTERRUPTED = Guard(
    "no round interrupted",
    lambda model: model.resume_to in CLOSABLE,
    lambda model: f"the interrupted round ({model.resume_to}) must be voided first (void_round)",
)


@dataclass(frozen=True, slots=True)
class T:
    trigger: Trigger
    source: str | tuple[str, ...]  # a state (TableState), a group name (ACTIVE, OPEN, FAULTS), or several
    dest: str | None  # None: an internal transition (an input the state accepts, no state change)
    label: str = ""  # the rule or condition, shown on the diagram
    guards: tuple[Guard, ...] = ()
    resume: TableState | None = None  # internal transition of ``faults``: sets ``resume_to`` to this


TRANSITIONS: list[T] = [
    T(Tr.OPEN_TABLE, S.CLOSED, S.LOADING, "supervisor open_table", (NO_SERVICE_FAULT,)),
    T(Tr.LOADED, S.LOADING, S.CUT, "batch shoe shuffled, decks x 52 cards"),
    T(Tr.LOADED_CONTINUOUS, S.LOADING, S.BETTING, "continuous: >= 2 packets, decks x 52 (r.53-54)"),
    T(Tr.CUT_DONE, S.CUT, S.BETTING, "cut by seat or inspector (r.8)"),
    T(Tr.PLACE_BET, S.BETTING, None, "dealer place_bet (r.13)"),
    T(Tr.CLEAR_BET, S.BETTING, None, "dealer clear_bet"),
    T(Tr.JACKPOT_CHIP, S.BETTING, None, "dealer jackpot_chip (r.41b, r.45, r.47)"),
    T(Tr.CLOSE_BETS, S.BETTING, S.NO_MORE_BETS, "no more bets (jackpot chips collected, r.48)"),
    T(Tr.START_DEAL, S.NO_MORE_BETS, S.DEALING),
    T(Tr.PLAY, (S.PLAYERS, S.DEALING), None, "dealer decisions (hit, stand, double, split, insurance...)"),
    T(Tr.INITIAL_DEALT, S.DEALING, S.PLAYERS, "initial deal complete"),
    T(Tr.TO_DEALER, (S.DEALING, S.PLAYERS), S.DEALER, "players done"),
    T(Tr.SETTLE, (S.DEALING, S.PLAYERS, S.DEALER), S.SETTLED, "round complete"),
    T(Tr.VOID, tuple(ROUND_ACTIVE), S.SETTLED, "void: bets returned (PT-ONLINE r.27-28)"),
    T(Tr.CARDS_IN, S.SETTLED, S.CARDS_RETURNED, "DiscardInserted, lid opened (r.59)"),
    T(Tr.NEXT_ROUND, (S.SETTLED, S.CARDS_RETURNED), S.BETTING, "next_round (r.61 carry if lid stayed shut)"),
    T(Tr.RESHUFFLE, (S.SETTLED, S.CARDS_RETURNED), S.SHUFFLING, "warning/cut card seen (r.11)"),
    T(Tr.DEALER_SIGN_IN, BETWEEN_ROUNDS, None, "dealer signs in (dealer on duty, between rounds)"),
    T(Tr.SEAT_PLAYER, (S.LOADING, OPEN, FAULTS), None, "player_in / player_out (issue 41)", (IN_SESSION,)),
    T(Tr.SHUFFLED, S.SHUFFLING, S.CUT, "ShuffleFinished"),
    T(Tr.CLOSE_TABLE, CLOSABLE, S.CLOSING, "supervisor close_table", (NO_BETS,)),
    T(Tr.DECK_OK, S.CLOSING, S.CLOSED, "deck check complete (r.55)"),
    T(Tr.DECK_BAD, S.CLOSING, S.DECK_CHECK_FAILED, "missing/extra/duplicate card (r.55)"),
    T(Tr.ACK_DECK_CHECK, S.DECK_CHECK_FAILED, S.CLOSED, "supervisor ack_deck_check"),
    T(
        Tr.RUN_DECK_CHECK,
        (S.CLOSED, S.CLOSING, S.DECK_CHECK_FAILED),
        None,
        "supervisor run_deck_check (r.55)",
    ),
    T(Tr.JAM, (ACTIVE, FAULTS), S.JAMMED, "Jammed (r.51)"),
    T(Tr.LINK_LOST, (ACTIVE, FAULTS), S.LINK_DOWN, "LinkDown"),
    T(Tr.FORCED, (ACTIVE, FAULTS), S.TAMPER, "lid forced open (r.60)"),
    T(Tr.JOURNAL_FAILED, (ACTIVE, FAULTS), S.JOURNAL_IO, "a journal write failed (disk full, read-only)"),
    T(Tr.INTEGRITY_FAILED, (ACTIVE, FAULTS), S.INTEGRITY, "journal chain, snapshot or pinned config bad"),
    T(
        Tr.INTEGRITY_CLOSE,
        S.INTEGRITY,
        S.CLOSING,
        "supervisor close_table (the session ends)",
        (NO_ROUND_INTERRUPTED,),
    ),
    T(Tr.SEQUENCE_FAULT, (ACTIVE, FAULTS), S.SHOE_SEQUENCE, "shoe_seq repeated or out of order"),
    T(Tr.COUNT_FAULT, (ACTIVE, FAULTS), S.CARD_COUNT, "a card code more often than the decks hold"),
    T(
        Tr.FAULT_CLEARED,
        (S.JAMMED, S.LINK_DOWN, S.TAMPER, S.JOURNAL_IO, S.SHOE_SEQUENCE, S.CARD_COUNT),
        S.RESYNC,
        "authorised clear (clear_jam, clear_link, lock_lid, clear_journal_io, clear_shoe_fault): count cards inside",
    ),
    T(Tr.RESTARTED, ACTIVE, S.RESYNC, "service restarted: lid locked, count cards inside"),
    T(Tr.RESTARTED, S.RESYNC, None, "service restarted during the resync: count again"),
    T(Tr.RESUME, S.RESYNC, ACTIVE, "counts agree (else round void)"),
    # A card delivered late during a fault completes a round phase: the table resumes in the next phase.
    T(Tr.INITIAL_DEALT, FAULTS, None, "during a fault: resume in players", resume=S.PLAYERS),
    T(Tr.TO_DEALER, FAULTS, None, "during a fault: resume in dealer", resume=S.DEALER),
    T(Tr.SETTLE, FAULTS, None, "during a fault: resume in settled", resume=S.SETTLED),
    T(Tr.VOID, FAULTS, None, "during a fault: resume in settled", resume=S.SETTLED),
    # The round's cards went in while the table was in a fault or counting after a restart (the lid was open):
    # the lid cycle goes on from there (PT-2001 r.59, r.62), the table resumes with the cards returned.
    T(Tr.CARDS_IN, FAULTS, None, "during a fault: resume in cards_returned", resume=S.CARDS_RETURNED),
]


# Why an input is refused in a state, where the generic "not allowed in state" would not say enough.
STATE_REFUSALS: dict[tuple[Trigger, TableState], str] = {
    (Tr.OPEN_TABLE, S.DECK_CHECK_FAILED): "the last deck check failed: acknowledge it first (PT-2001 r.55)",
    **{(Tr.SEAT_PLAYER, state): SESSION_CLOSED for state in (S.CLOSED, S.CLOSING, S.DECK_CHECK_FAILED)},
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


def refusal(model: Any, trigger: Trigger, action: str) -> str:
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
    state_cls = TableNode
    transition_cls = TableTransition

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._may: dict[tuple[str, str], list[NestedTransition]] = {}  # (trigger, nested state) -> candidates
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
                    "trigger": str(t.trigger),  # the plain text
                    "source": PATH[_single(t.source)],
                    "dest": None,
                    "conditions": [lambda *a, _s=resumable, **k: model.resume_to in _s],
                    "after": [lambda *a, _to=t.resume, **k: setattr(model, "resume_to", _to)],
                    "label": t.label,
                    "guard": f"resume_to in {', '.join(resumable)}",
                }
            )
            continue
        if t.trigger == Tr.RESUME:
            for target in RESUMABLE:
                transitions.append(
                    {
                        "trigger": Tr.RESUME.value,
                        "source": PATH[_single(t.source)],
                        "dest": PATH[target],
                        "conditions": [lambda *a, _t=target, **k: model.resume_to == _t],
                        "label": t.label,
                        "guard": f"resume_to = {target}",
                    }
                )
            # nowhere to resume to (no interrupted state known): stay, forget it
            transitions.append(
                {
                    "trigger": Tr.RESUME.value,
                    "source": PATH[_single(t.source)],
                    "dest": None,
                    "after": [forget],
                }
            )
            continue
        into_fault = t.dest in FAULT_STATES
        for source in _sources(t):
            transitions.append(
                {
                    "trigger": str(t.trigger),  # the plain text
                    "source": PATH[source],
                    "dest": PATH[t.dest] if t.dest is not None else None,
                    "conditions": conditions,
                    # entering the fault sub-machine from an active state: remember where to resume
                    "before": [remember] if into_fault and source not in (*FAULT_STATES, FAULTS) else [],
                    "label": t.label,
                    "guard": ", ".join(g.name for g in t.guards),
                }
            )
    states = _with_callbacks(TREE, {FAULTS: {"on_exit": [forget]}})
    return TableMachine(
        model=model,
        states=states,
        transitions=transitions,
        initial=PATH[S.CLOSED],
        auto_transitions=False,
        model_attribute="machine_state",
    )


def _with_callbacks(tree: list[Any], callbacks: dict[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for node in tree:
        if isinstance(node, str):
            out.append({"name": str(node), **callbacks.get(node, {})})  # the library is given plain texts
        else:
            out.append(
                {
                    "name": node["name"],
                    "children": _with_callbacks(node["children"], callbacks),
                    **callbacks.get(node["name"], {}),
                }
            )
    return out
