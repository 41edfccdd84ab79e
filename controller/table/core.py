"""The table's pure core: a deterministic state machine from inputs to effects.

No I/O, no clock, no asyncio: ``apply(input, now)`` changes the state and returns the effects (journal
records, outbox events, alerts, shoe commands, GPIO writes) for the shell to commit and execute. The same
inputs from the same snapshot always give the same state: recovery relies on it (re-apply journaled inputs).
A rejected dealer input or supervisor action raises ``Rejected`` and leaves the state exactly as it was.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.actions import DEALER_PLAY, TECHNICIAN_ACTIONS
from controller.canonical import canonical
from controller.mqtt.topics import event_topic, state_topic
from controller.table import machine as m
from controller.table.effects import Alert, Effect, GpioWrite, JournalRecord, Publish, Rejected, ShoeCommand
from controller.table.inputs import decode_event
from controller.table.profile import WARNING_TOLERANCE_CARDS, TableProfile, table_profile
from controller.table.reporting import (
    card_event,
    hole_card_hidden,
    is_hole_card,
    round_state,
    settlement_event,
)
from controller.table.rounds import (
    EngineFactory,
    RoundTracker,
    default_card,
    default_engine_factory,
    jsonable,
)
from drivers import events as ev

LID_OPEN_TIMEOUT_S = (
    10.0  # after OpenLid, how long the lid has to open before the round's cards are carried (r.61)
)
CARD_CODES = [r + s for s in ev.SUITS for r in ev.RANKS]
PLAY_ACTIONS = DEALER_PLAY
SUPERVISOR_ROLES = ("supervisor",)
FAULT_TRIGGER = {
    "jam": "jam",
    "link_down": "link_lost",
    "tamper": "forced",
    "journal_io": "journal_failed",
    "integrity": "integrity_failed",
    "shoe_sequence": "sequence_fault",
    "card_count": "count_fault",
}
NO_SESSION = ("closed", "deck_check_failed")  # no fault state to enter: the fault is only listed
PROFILE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _parse_profile_text(text: str, name: str) -> Any:
    """A rule profile from the TOML text pinned in the session (no file is read)."""
    import tomllib

    from controller.rules.profiles import profile_from_dict

    return profile_from_dict(tomllib.loads(text), source=f"{name} (pinned in the session)")


class JackpotSeam:
    """Where the progressive jackpot plugs in (PT-2001 r.38-50). Pure like the core; default: nothing.

    The real one is ``controller.table.jackpot.TableJackpot``; its state is part of the core's snapshot.
    """

    def snapshot(self) -> dict[str, Any] | None:
        return None

    def restore(self, data: dict[str, Any] | None) -> None:
        return None

    def state_doc(self) -> dict[str, Any] | None:
        """The retained ``state/jackpot`` document; None: not published."""
        return None

    def round_doc(self, round_id: str | None) -> dict[str, Any]:
        """Extra fields for ``state/round`` (a winning hand flagged until paid, PT-2001 r.49)."""
        return {}

    def on_open_table(self, args: dict[str, Any], profile: Any) -> list[Effect]:
        return []

    def check_close(self) -> None:
        """Raise ``Rejected`` if the table may not close (a hit pending, PT-2001 r.49)."""

    def manual_chip(self, seat: int) -> None:
        """Raise ``Rejected`` if the dealer may not enter a jackpot chip now (PT-2001 r.41b)."""

    def on_chip_sensor(
        self, seat: int, present: bool, *, betting: bool, round_id: str | None, seats: int, now: float
    ) -> list[Effect]:
        return [JournalRecord("gpio_input", {"name": f"chip_slot_{seat}", "value": present})]

    def collect(
        self, round_id: str, main_bets: list[int], manual: list[int], *, seats: int, now: float
    ) -> tuple[list[int], list[Effect]]:
        """At "no more bets": the seats whose jackpot chip is accepted (PT-2001 r.41, r.45, r.47, r.48)."""
        return list(manual), []

    def on_no_more_bets(self, round_id: str, chips: list[int]) -> list[Effect]:
        """Chips are collected at "no more bets", before the deal (PT-2001 r.48)."""
        return []

    def after_initial_deal(self, round_id: str, cards: list[dict[str, Any]]) -> list[Effect]:
        """Evaluate the first cards of each seat for a jackpot hit (PT-2001 r.42)."""
        return []

    def on_progress(self, tracker: Any, phase: str) -> list[Effect]:
        """After each card or decision of the round (the first 2-4 cards of a seat, PT-2001 r.42)."""
        return []

    def on_display(self, connected: bool) -> list[Effect]:
        return []

    def on_restart(self) -> list[Effect]:
        return []

    def supervisor(
        self, action: str, user: str, args: dict[str, Any], *, between_rounds: bool
    ) -> list[Effect]:
        raise Rejected("the progressive jackpot is not integrated on this table")


@dataclass
class Step:
    effects: list[Effect]
    result: dict[str, Any] = field(default_factory=dict)


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return pickle.loads(pickle.dumps(data, pickle.HIGHEST_PROTOCOL))


def _card_valid(code: str) -> bool:
    return code in CARD_CODES


class TableCore:
    def __init__(
        self,
        load_profile: Callable[[str], Any],
        *,
        engine_factory: EngineFactory = default_engine_factory,
        make_card: Callable[[str], Any] = default_card,
        jackpot: JackpotSeam | None = None,
    ) -> None:
        self._load_profile = load_profile
        self._engine_factory = engine_factory
        self._make_card = make_card
        self.jackpot = jackpot or JackpotSeam()
        self.state = "closed"
        self.machine = m.build_machine(self)
        self._fx: list[Effect] = []
        self._result: dict[str, Any] = {}
        self.now = 0.0
        self._reset()

    # ================================================================ state
    def _reset(self) -> None:
        self.machine.set_state("closed")
        self.undo: bytes = b""  # the state before the last apply(), pickled (restore() takes it)
        self.resume_to: str | None = None
        self.profile_name: str | None = None
        self.shuffler: str = "continuous"  # "continuous" | "batch" (the table's shoe, not the profile)
        self.device: dict[str, Any] = {}  # the shoe's last Identified
        self.rules_profile: Any = None
        self.tp: TableProfile | None = None
        self.session: dict[str, Any] = {"id": None, "no": 0, "packets": 0, "opened_by": None, "rounds": 0}
        self.shoe: dict[str, Any] = {
            "no": 0,
            "dealt": 0,  # cards out since the shoe was shuffled
            "last_seq": 0,
            "first_round": True,
            "last_round": None,  # None | "next" | round_id: the last round of this shoe (PT-2001 r.11)
            "cutter": None,  # seat (int) or "inspector": who cut the current shoe (r.8)
            "shuffling": False,
        }
        self.inside = 0  # cards the controller believes are inside the machine
        self.out = 0  # cards out of the machine (table + discard)
        self.lid: dict[str, Any] = {"state": "locked", "unlock": None, "deadline": None}
        self.bets: dict[str, dict[str, Any]] = {}  # seat (str, JSON keys) -> {"amount", "side_bets"}
        self.chips: list[int] = []
        self.round: RoundTracker | None = None
        self.round_void = False
        self.round_no = 0
        self.last_seats: list[int] = []
        self.uninserted: list[str] = []  # settled rounds whose cards are not in the shuffler yet (r.61-62)
        self.faults: dict[str, Any] = {}  # "jam" -> {...}, "link_down" -> {...}, "tamper" -> {...}
        self.pending_replacement: dict[str, Any] | None = None
        self.deck_check: dict[str, Any] | None = None
        self.hole_revealed: str | None = None  # round whose hole card has been published (PT-2001 r.17)
        self._published: dict[str, str] = {}  # JSON text of the last retained state document per topic
        self.outputs: dict[str, bool] = {"lid_lock": True, "warning_light": True}

    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (journal snapshots, tests)."""
        return pickle.loads(self._frozen())

    def _frozen(self) -> bytes:
        # Pickled: a deep copy of plain data several times faster than copy.deepcopy. Every input takes one
        # for the rollback of a refused input or a failed commit, and it is unpickled only then.
        return pickle.dumps(
            {
                "state": self.state,
                "resume_to": self.resume_to,
                "profile": self.profile_name,
                "shuffler": self.shuffler,
                "device": self.device,
                "session": self.session,
                "shoe": self.shoe,
                "inside": self.inside,
                "out": self.out,
                "lid": self.lid,
                "bets": self.bets,
                "chips": self.chips,
                "round": self.round.to_dict() if self.round else None,
                "round_void": self.round_void,
                "round_no": self.round_no,
                "last_seats": self.last_seats,
                "uninserted": self.uninserted,
                "faults": self.faults,
                "pending_replacement": self.pending_replacement,
                "deck_check": self.deck_check,
                "outputs": self.outputs,
                "hole_revealed": self.hole_revealed,
                "published": self._published,  # so a restored core publishes exactly what the live one would
                "jackpot": self.jackpot.snapshot(),  # the meter is journaled with the round it belongs to
            },
            pickle.HIGHEST_PROTOCOL,
        )

    def restore(self, snap: dict[str, Any] | bytes) -> None:
        s = pickle.loads(snap) if isinstance(snap, bytes) else _copy(snap)
        self._reset()
        self.device = s["device"]
        self.session = s["session"]  # before the profile: a pinned session carries its profile's text
        self._set_profile(s["profile"], s["shuffler"])
        self.machine.set_state(s["state"])
        self.resume_to = s["resume_to"]
        self.session, self.shoe, self.inside, self.out = s["session"], s["shoe"], s["inside"], s["out"]
        self.lid, self.bets, self.chips = s["lid"], s["bets"], s["chips"]
        self.round_no, self.last_seats, self.uninserted = s["round_no"], s["last_seats"], s["uninserted"]
        self.faults, self.pending_replacement = s["faults"], s["pending_replacement"]
        self.deck_check, self.outputs = s["deck_check"], s["outputs"]
        self.round_void = s["round_void"]
        self.hole_revealed = s.get("hole_revealed")
        self._published = s.get("published", {})
        self.jackpot.restore(s.get("jackpot"))
        self.round = (
            RoundTracker.restore(
                s["round"], self.rules_profile, engine_factory=self._engine_factory, make_card=self._make_card
            )
            if s["round"]
            else None
        )

    def _set_profile(self, name: str | None, shuffler: str) -> None:
        self.profile_name, self.shuffler = name, shuffler
        if name is None:
            self.rules_profile, self.tp = None, None
            return
        pinned = self.session.get("pinned")
        if isinstance(pinned, dict) and pinned.get("profile") == name and pinned.get("profile_text"):
            # Issue 13 §2: the session's rules are the ones pinned when it opened, never the file as it is now
            self.rules_profile = _parse_profile_text(str(pinned["profile_text"]), name)
        else:
            self.rules_profile = self._load_profile(name)
        self.tp = table_profile(self.rules_profile, continuous=shuffler == "continuous")

    def view(self) -> dict[str, Any]:
        """The table state as published (retained) and shown on the pit terminal."""
        rnd = self.round
        return {
            "state": self.state,
            "session_id": self.session["id"],
            "profile": self.profile_name,
            "shuffler": self.shuffler,
            "round_id": rnd.round_id if rnd else None,
            "round_active": self.state in m.ROUND_ACTIVE
            or (self.state in m.FAULT_STATES and self._round_active()),
            "bets": self.bets,
            "contestable_rounds": list(self.uninserted),  # r.62: final but contestable until inserted
            "carried_rounds": [r for r in self.uninserted if not rnd or r != rnd.round_id],  # r.61
            "faults": sorted(self.faults),
            "resume_to": self.resume_to,
            "lid": self.lid["state"],
            "lid_unlocked_by": self.lid["unlock"],
            "cards_inside": self.inside,
            "cards_out": self.out,
            "last_shoe_seq": self.shoe["last_seq"],
            "last_round_of_shoe": self.shoe["last_round"] is not None,
            "awaiting_card_replacement": self.pending_replacement is not None,
            "outputs": dict(self.outputs),
            # the open session's bet limits in minor units (the pit terminal's chips stay within them)
            "limits": {"min_bet": self.tp.min_bet, "max_bet": self.tp.max_bet} if self.tp else None,
        }

    # ================================================================ entry point
    def apply(self, inp: dict[str, Any], now: float, *, states: bool = True) -> Step:
        """Apply one input. Raises ``Rejected`` (state unchanged) for a forbidden dealer/supervisor input.

        ``states=False``: leave the retained state documents out of this step; the caller takes them with
        ``publish_states()`` after the last input of a burst (a document superseded within one commit would
        never be read by anyone, and building it is most of the core's cost per card)."""
        before = self._frozen()
        self.undo = before  # the shell restores this if the journal commit fails
        self._fx, self._result, self.now = [], {}, float(now)
        try:
            kind = inp.get("type")
            if kind == "device":
                self._device(decode_event(inp))
            elif kind == "dealer":
                self._dealer(str(inp.get("action")), dict(inp.get("args") or {}))
            elif kind == "supervisor":
                self._supervisor(
                    str(inp.get("user") or ""),
                    str(inp.get("role") or ""),  # no role, no authority: refused by _supervisor
                    str(inp.get("action")),
                    dict(inp.get("args") or {}),
                )
            elif kind == "tick":
                self._tick()
            elif kind == "gpio":
                self._gpio(str(inp.get("name")), bool(inp.get("value")))
            elif kind == "command_failed":
                self._command_failed(str(inp.get("command")), str(inp.get("text", "")), bool(inp.get("link")))
            elif kind == "restart":
                self._restart()
            elif kind == "jackpot_display":  # the jackpot sign's link (PT-2001 r.41), journaled
                self._fx.extend(self.jackpot.on_display(bool(inp.get("connected"))))
            elif kind == "journal_fault":  # the shell's journal commit failed (issue 14 item 3)
                self._journal_fault(str(inp.get("kind") or "io_error"), str(inp.get("text") or ""))
            elif kind == "integrity_fault":  # chain, snapshot or pinned configuration (issue 13 §1-2)
                self._integrity_fault(str(inp.get("reason") or ""), dict(inp.get("details") or {}))
            else:
                raise Rejected(f"unknown input type {kind!r}")
            self._sync_outputs()
            if states:
                self._state_documents()
            self._hole_card_event()  # every input, in order with the card events (never deferred)
        except BaseException:
            self.restore(before)
            raise
        return Step(self._fx, self._result)

    # ================================================================ helpers
    def _record(self, kind: str, /, **data: Any) -> None:
        self._fx.append(JournalRecord(kind, jsonable(data)))

    def _publish(self, topic: str, event_type: str, data: dict[str, Any], retain: bool = False) -> None:
        self._fx.append(Publish(topic, event_type, jsonable(data), retain))

    def _event(self, kind: str, /, **data: Any) -> None:
        """An ``events/<kind>`` message (docs/mqtt.md), committed with the input that caused it."""
        self._publish(event_topic(kind), kind, data)

    def _fault_event(self, name: str, state: str, info: dict[str, Any]) -> None:
        if name == "jam":  # the jam has its own event type (PT-2001 r.51)
            jam: dict[str, Any] = {"state": "jammed" if state == "raised" else "cleared"}
            if state == "raised" and info.get("location") in ("input", "shuffler", "output", "unknown"):
                jam["location"] = info["location"]
            if self.round is not None:
                jam["round_id"] = self.round.round_id
            self._event("jam", **jam)
        self._event("fault", fault=name, state=state, info=info)

    def publish_states(self) -> list[Publish]:
        """The retained state documents whose content changed since they were last published (after inputs
        applied with ``states=False``). Part of the state like any input's effects: ``undo`` covers it."""
        self._fx = []
        self._state_documents()  # appends Publish effects only
        return self._fx

    def _state_documents(self) -> None:
        """Retained state documents, each published only when its content changed."""
        rnd = self.round
        jam = self.faults.get("jam")
        link = self.faults.get("link_down")
        link_back = link is None or bool(link.get("restored"))
        docs = {
            "table": self.view(),
            "round": {
                **round_state(
                    rnd, void=self.round_void, contestable=bool(rnd and rnd.round_id in self.uninserted)
                ),
                **self.jackpot.round_doc(rnd.round_id if rnd else None),
            },
            "lid": {
                "state": self.lid["state"],
                "locked": bool(self.outputs.get("lid_lock", True)),
                "unlocked_by": self.lid["unlock"],
            },
            "jam": {
                "jammed": jam is not None,
                **({"location": jam.get("location")} if jam else {}),
                "device_cleared": bool(jam and jam.get("device_cleared")),
            },  # r.51: awaits the supervisor
            "shoe": {
                "shuffler": self.shuffler,
                "decks": self.rules_profile.decks if self.rules_profile is not None else None,
                "cards_inside": self.inside,  # a count only: nothing reveals the cards inside
                "cards_out": self.out,
                "dealt_this_shoe": self.shoe["dealt"],
                "shoe_no": self.shoe["no"],
                "shuffling": bool(self.shoe["shuffling"]),
                # The link itself; a link fault stays in state/table "faults" until clear_link, even when back.
                "linked": bool(self.device) and link_back,
                "last_round_of_shoe": self.shoe["last_round"] is not None,
            },
        }
        jackpot = self.jackpot.state_doc()
        if jackpot is not None:
            docs["jackpot"] = jackpot
        for name, data in docs.items():
            # The JSON text is the cache key: immutable (the documents share live dicts such as the bets),
            # cheap to compare, and it proves the document is plain JSON.
            text = canonical(data)
            if self._published.get(name) != text:
                self._published[name] = text
                self._fx.append(Publish(state_topic(name), "state", retain=True, text=text))

    def _hole_card_event(self) -> None:
        """The dealer's hole card turned over: one events/round message, the first input it is seen after."""
        rnd = self.round
        engine = rnd.engine if rnd is not None else None
        if (
            engine is not None
            and engine.profile.hole_card
            and len(engine.dealer) >= 2
            and not hole_card_hidden(engine)
            and self.hole_revealed != rnd.round_id
        ):
            self.hole_revealed = rnd.round_id  # the dealer turned the hole card over (PT-2001 r.17)
            self._event(
                "round", round_id=rnd.round_id, phase="hole_card_revealed", card=str(engine.dealer[1])
            )

    def _alert(self, kind: str, severity: str, reason: str, /, **details: Any) -> None:
        self._fx.append(Alert(kind, severity, reason, jsonable(details)))
        # "alert" records belong to the AlertManager, which journals the alert itself when it raises it.
        self._record("alert_requested", kind=kind, severity=severity, reason=reason, details=details)

    def _cmd(self, command: ev.Command) -> None:
        self._fx.append(ShoeCommand(command))

    def _go(self, trigger: str) -> None:
        getattr(self, trigger)()

    def _round_active(self) -> bool:
        return self.round is not None and (
            self.state in m.ROUND_ACTIVE
            or (self.state in m.FAULT_STATES and self.resume_to in m.ROUND_ACTIVE)
        )

    def _sync_outputs(self) -> None:
        """Safe outputs on every fault (PT-2001 r.51): light on, lid locked unless an opening is allowed."""
        want = {
            "lid_lock": self.lid["unlock"] is None,
            "warning_light": self.state in m.FAULT_STATES
            or any(f in self.faults for f in m.SERVICE_FAULTS)  # also on a closed table
            or self.state == "deck_check_failed"
            or self.pending_replacement is not None,
        }
        for name, value in want.items():
            if self.outputs.get(name) != value:
                self.outputs[name] = value
                self._fx.append(GpioWrite(name, value))
                if name == "warning_light":
                    self._cmd(ev.SetWarningLight(value))

    def _ts(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))

    # ================================================================ device events
    def _device(self, e: ev.DeviceEvent) -> None:
        if e.event_no:  # the shoe's resume point: committed with this input (docs/protocol.md §5a)
            self.device["event_no"] = e.event_no
        handler = getattr(self, f"_on_{type(e).__name__}", None)
        if handler is None:
            self._record("device_event_ignored", event=type(e).__name__)
            return
        handler(e)

    def _on_Identified(self, e: ev.Identified) -> None:
        self._record("shoe_identified", model=e.model, firmware=e.firmware, serial=e.serial_number)
        same_boot = bool(e.boot_id) and self.device.get("boot_id") == e.boot_id
        if not same_boot:
            self.shoe["seq_restart"] = True  # another boot of the shoe: its shoe_seq may start again at 1
        self.device = {
            "continuous": e.continuous,
            "decks_loaded": e.decks_loaded,
            "serial": e.serial_number,
            # docs/protocol.md §5a: the newest event of this boot of the shoe committed here
            "boot_id": e.boot_id,
            "event_no": self.device.get("event_no", 0) if same_boot else 0,
        }
        if self.tp and e.continuous != self.tp.continuous:
            self._alert(
                "profile_mismatch",
                "critical",
                f"the session runs a {self.shuffler} shoe but the device reports another kind",
                device_continuous=e.continuous,
            )

    def _on_LinkUp(self, e: ev.LinkUp) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            # Safety first (product guide; as a jam, PT-2001 r.51): the link is back but the fault stays raised,
            # light on and lid locked, until a chief inspector (or a technician) ``clear_link``s it.
            link["restored"] = True
            self._record("link_up", at=self._ts(), state=self.state)
            if self.lid["unlock"] is None:
                self._cmd(ev.LockLid())  # a shoe that rebooted during the outage is locked again (r.60)
            if self.outputs.get("warning_light"):
                self._cmd(ev.SetWarningLight(True))  # and shows its own light again
            self._fault_event("link_down", "raised", link)  # "link back, awaiting supervisor"
        elif self.state == "resync":
            self._cmd(ev.ReportCounts())  # the count asked for before the link came up was lost
        elif self.state == "loading" and self.lid["unlock"] == "loading" and self.lid["state"] != "open":
            self._cmd(ev.UnlockLid())  # the opening for the loading was lost with the link
            self._cmd(ev.OpenLid())

    def _on_LinkDown(self, e: ev.LinkDown) -> None:
        link = self.faults.get("link_down")
        if link is not None:
            if link.get("restored"):  # down again before a supervisor cleared it: no second alert
                link["restored"], link["reason"] = False, e.reason
                self._record("link_down_again", reason=e.reason, at=self._ts())
                self._fault_event("link_down", "raised", link)
            return
        if self.state in ("closed", "deck_check_failed"):
            return
        self._enter_fault(
            "link_down", "link_lost", {"reason": e.reason, "restored": False, "cleared_by": None}
        )
        self._alert(
            "link_down",
            "critical",
            "shoe link down: dealing blocked; once the link is back a chief inspector (or a technician) "
            "clears it (clear_link)",
            reason=e.reason,
        )

    def _sv_clear_link(self, user: str, args: dict[str, Any]) -> None:
        """Like ``clear_jam`` (PT-2001 r.51): an authorised person ends the link fault, recorded with who and when;
        the resync that follows counts the cards inside (a round with cards unaccounted for is void)."""
        link = self.faults.get("link_down")
        if link is None:
            raise Rejected("no shoe link fault to clear")
        if not link.get("restored"):  # .get: a snapshot from before clear_link has no "restored"
            raise Rejected(
                f"the shoe link is still down: {link.get('reason')}; reconnect the shoe first, then clear it"
            )
        link["cleared_by"] = user
        self._record("link_cleared", user=user, at=self._ts(), reason=link.get("reason"))
        self._clear_fault("link_down")

    def _on_Jammed(self, e: ev.Jammed) -> None:
        self._record("jam", location=str(e.location), at=self._ts(), state=self.state)
        if self.state in ("closed", "deck_check_failed"):
            self._alert("jam", "warning", "jam reported while the table is closed (PT-2001 r.51)")
            return
        self._enter_fault(
            "jam", "jam", {"location": str(e.location), "device_cleared": False, "cleared_by": None}
        )
        self._alert(
            "jam",
            "critical",
            "shoe jammed: call a chief inspector, who alone opens the lid (PT-2001 r.51)",
            location=str(e.location),
        )

    def _on_JamCleared(self, e: ev.JamCleared) -> None:
        jam = self.faults.get("jam")
        if jam is None:
            return
        jam["device_cleared"] = True
        self._record("jam_cleared_by_device")
        if jam["cleared_by"]:
            self._clear_fault("jam")

    def _on_LidChanged(self, e: ev.LidChanged) -> None:
        state = str(e.state)
        lid_event: dict[str, Any] = {"state": state, "previous": self.lid["state"]}
        if self.lid["unlock"]:
            lid_event["by"] = str(self.lid["unlock"])
        self._event("lid", **lid_event)
        self._record("lid", state=state, unlocked_by=self.lid["unlock"])
        if (
            self.lid.pop("auto_before_restart", False)
            and e.state == ev.LidState.OPEN
            and not self.lid["unlock"]
        ):
            self.lid["unlock"], self.lid["state"] = "auto", "open"  # the opening the restart interrupted
            self._record("lid_opened_before_restart", at=self._ts())
            return
        if e.state == ev.LidState.FORCED_OPEN or (e.state == ev.LidState.OPEN and self.lid["unlock"] is None):
            self.lid["state"] = "forced_open"
            self._tamper("lid opened without an automatic or authorised opening (PT-2001 r.60)")
            return
        if e.state in (ev.LidState.LOCKED, ev.LidState.UNLOCKED):
            if self.lid["state"] not in ("open", "forced_open"):
                self.lid["state"] = state
            return
        self.lid["state"] = state
        if e.state == ev.LidState.OPEN:
            self.lid["deadline"] = None
            return
        # closed: lock again (PT-2001 r.60); the continuous shuffler starts shuffling by itself
        if self.lid["unlock"] is not None:
            self.lid["unlock"] = None
            self._cmd(ev.LockLid())

    def _tamper(self, reason: str) -> None:
        # Closed, or after a failed deck check (PT-2001 r.55): no session runs, so no fault state to enter;
        # the opening is still a critical alert.
        if "tamper" not in self.faults and self.state not in ("closed", "deck_check_failed"):
            self._enter_fault("tamper", "forced", {"at": self._ts()})
        self._alert("tamper", "critical", reason)

    def _on_DiscardInserted(self, e: ev.DiscardInserted) -> None:
        self._record("discard_inserted", count=e.count, state=self.state)
        if self.lid["state"] != "open":
            self._alert(
                "discard_lid_closed", "warning", "cards inserted while the lid is not open (PT-2001 r.59)"
            )
        self.inside += e.count
        if self.state == "loading":
            self.session["packets"] += 1  # PT-2001 r.54: at least two packets
            return
        if e.count > self.out:
            # PT-2001 r.54: the cards are loaded once per session; more going in than came out were added
            self._alert(
                "cards_added",
                "critical",
                f"{e.count} card(s) inserted but only {self.out} were out of the shoe: cards added after "
                "the loading (PT-2001 r.54-55)",
                inserted=e.count,
                out=self.out,
            )
        self.out = max(0, self.out - e.count)
        after_round = ("settled", "cards_returned")
        if self.state in after_round or (self.state in m.FAULT_STATES and self.resume_to in after_round):
            # r.62: once inserted, the rounds' records are no longer contestable (r.61: carried ones too)
            if self.uninserted:
                self._record("rounds_final", rounds=self.uninserted, cards=e.count)
                self._event("shoe", procedure="cards_inserted", rounds=self.uninserted, rule="PT-2001 r.62")
                self.uninserted = []
            if self.out:
                self._alert("discard_count", "warning", f"{self.out} card(s) still out after the insertion")
            if self.state == "settled":
                self._go("cards_in")

    def _on_ShuffleStarted(self, e: ev.ShuffleStarted) -> None:
        self.shoe["shuffling"] = True
        if self.shuffler == "batch":
            self.shoe["last_seq"] = 0  # every card back in: a batch shoe numbers its cards from 1 again
        self._record("shuffle_started", state=self.state)

    def _on_ShuffleFinished(self, e: ev.ShuffleFinished) -> None:
        self.shoe["shuffling"] = False
        self._record("shuffle_finished", cards_inside=e.cards_inside, state=self.state)
        self._count_report(e.cards_inside, shuffled=True)

    def _on_CardsInside(self, e: ev.CardsInside) -> None:
        self._record("cards_inside", count=e.count, expected=self.inside, state=self.state)
        self._count_report(e.count)

    def _count_report(self, count: int, *, shuffled: bool = False) -> None:
        tp = self.tp
        if self.state == "loading":
            self._check_loaded(count)
        elif self.state == "shuffling":
            if count != tp.total_cards:
                self._alert(
                    "shoe_count", "warning", f"{count} cards after the shuffle, expected {tp.total_cards}"
                )
            self.inside, self.out = count, tp.total_cards - count
            self.shoe.update(no=self.shoe["no"] + 1, dealt=0, last_seq=0, first_round=True, last_round=None)
            self._go("shuffled")
            self._maybe_skip_cut()
        elif self.state == "resync":
            self._resync(count)
        elif self.state == "closing":
            self._closing_count(count, returned=shuffled)
        elif count != self.inside and self.state not in ("closed", "deck_check_failed"):
            self._alert("shoe_count", "warning", f"shoe reports {count} cards inside, expected {self.inside}")
            self.inside = count

    def _check_loaded(self, count: int) -> None:
        """PT-2001 r.53-54: loaded once, in at least two packets, with the device counting decks x 52."""
        tp = self.tp
        problems = []
        if tp.continuous and self.session["packets"] < 2:
            problems.append(
                f"loaded in {self.session['packets']} packet(s), at least two required (PT-2001 r.54)"
            )
        if count != tp.total_cards:
            problems.append(
                f"{count} cards inside, expected {tp.decks} decks x 52 = {tp.total_cards} (PT-2001 r.53)"
            )
        if problems:
            self._alert(
                "loading", "critical", "; ".join(problems), count=count, packets=self.session["packets"]
            )
            return
        self.inside, self.out = count, 0
        self.shoe.update(no=1, dealt=0, first_round=True, last_round=None, cutter=None)
        self._record(
            "session_loaded", session_id=self.session["id"], cards=count, packets=self.session["packets"]
        )
        self._event("session", action="opened", session_id=self.session["id"], profile=tp.name)
        self._go("loaded_continuous" if tp.continuous else "loaded")
        self._maybe_skip_cut()

    def _on_DeviceError(self, e: ev.DeviceError) -> None:
        """An error the shoe or the card reader reports by itself: journaled with its code and text and
        alerted, never dropped (CONTRIBUTING: bad input is counted, logged and reported with a reason)."""
        self._record("device_error", code=e.code, text=e.text, state=self.state)
        self._alert(
            "device_error", "warning", f"shoe reported error {e.code}: {e.text or 'no text'}", code=e.code
        )

    def _on_CutCardOut(self, e: ev.CutCardOut) -> None:
        self._record("cut_card_out", dealt=self.shoe["dealt"])
        if self.tp is None or self.tp.continuous:
            # PT-2001 r.52: no cut card with a shuffler; r.56: no "last round of the shoe" with a continuous one
            self._alert("cut_card", "warning", "cut card from a continuous shuffler (PT-2001 r.52, r.56)")
            return
        self._last_round_of_shoe("cut card")

    def _on_WarningCardOut(self, e: ev.WarningCardOut) -> None:
        tp = self.tp
        if tp is None or tp.warning_from_end == 0:
            self._record("warning_card_out", dealt=self.shoe["dealt"])
            self._alert(
                "warning_card", "warning", "warning card from a continuous shuffler (PT-2001 r.52, r.56)"
            )
            return
        from_end = tp.total_cards - self.shoe["dealt"]
        players = len(self.round.bets) if self.round else len(self.bets) or len(self.last_seats)
        if tp.warning_at_least:
            valid = from_end >= tp.warning_from_end
            expected = f"among the last {tp.warning_from_end} cards or more (MO-2004 art.2.1.1)"
        else:
            single = players == 1 and tp.warning_single_player_middle
            target = tp.total_cards // 2 if single else tp.warning_from_end
            valid = abs(from_end - target) <= WARNING_TOLERANCE_CARDS
            expected = f"near card {target} from the end (PT-2001 r.9, {players} player(s))"
        self._record("warning_card_out", position_from_end=from_end, valid=valid, expected=expected)
        self._event(
            "shoe", procedure="warning_card", position_from_end=from_end, valid=valid, rule="PT-2001 r.9"
        )
        if not valid:
            self._alert(
                "warning_card_position", "warning", f"warning card {from_end} from the end; {expected}"
            )
        self._last_round_of_shoe("warning card")

    def _last_round_of_shoe(self, why: str) -> None:
        """PT-2001 r.11: the round in progress is the last; just before a round, that one is still played."""
        if self.shoe["last_round"] is not None:
            return
        self.shoe["last_round"] = self.round.round_id if self._round_active() else "next"
        self._event(
            "shoe", procedure="last_round", reason=why, round_id=self.shoe["last_round"], rule="PT-2001 r.11"
        )

    def _on_CardOut(self, e: ev.CardOut) -> None:
        if not self._card_came_out(e.shoe_seq, e.code):
            return
        code = e.code
        if self.state == "closed":
            self._record("card_out_while_closed", card=code, shoe_seq=e.shoe_seq)
            return
        if self.state == "settled" and self.round is not None and not self.round_void:
            self._deal(code, e.shoe_seq, e.face_up, late=True)  # PT-2001 r.19: drawn after the dealer stood
            return
        if self._round_active() and self._phase_state() in ("dealing", "players", "dealer"):
            if self.state in m.FAULT_STATES:  # a card out before the fault, delivered after it: it is known
                self._record("card_during_fault", card=code, shoe_seq=e.shoe_seq, fault=self.state)
        else:
            self._stray_card(code, e.shoe_seq, "card drawn outside the dealing of a round")
            return
        if self.pending_replacement is not None:
            self._stray_card(
                code, e.shoe_seq, "card drawn while a damaged card awaits replacement (PT-2001 r.51)"
            )
            return
        self._deal(code, e.shoe_seq, e.face_up)

    def _on_CardUnreadable(self, e: ev.CardUnreadable) -> None:
        if not self._card_came_out(e.shoe_seq, None):
            return
        what = "damaged" if e.damaged else "unreadable"
        self._record("card_unreadable", shoe_seq=e.shoe_seq, damaged=e.damaged, at=self._ts())
        in_round = self._round_active() and self._phase_state() in ("dealing", "players", "dealer")
        if in_round:
            self.pending_replacement = {"shoe_seq": e.shoe_seq, "damaged": e.damaged}
        self._alert(
            "card_unreadable",
            "critical" if in_round else "warning",
            f"{what} card #{e.shoe_seq}: a chief inspector replaces it at once; reported (PT-2001 r.51)",
            shoe_seq=e.shoe_seq,
            damaged=e.damaged,
        )

    def _card_came_out(self, shoe_seq: int, code: str | None) -> bool:
        """Count a card out; False (and a shoe-line fault) when the frame cannot be a card the shoe dealt."""
        last = self.shoe["last_seq"]
        restart = self.shoe.pop("seq_restart", False)  # the shoe rebooted: its shoe_seq starts again at 1
        if last and shoe_seq <= last and not (restart and shoe_seq == 1):
            # A valid CRC is not proof of a card (issue 13 §5): a number the shoe already used is a replayed,
            # forged or misread frame. Never dealt; the table stops until an authorised person clears it.
            reason = f"card #{shoe_seq} after #{last}: shoe_seq repeated or out of order"
            self._shoe_line_fault("shoe_sequence", reason, shoe_seq=shoe_seq, last_seq=last, card=code)
            self._alert("shoe_sequence", "critical", f"{reason}: {self._SHOE_LINE_ALERT}", shoe_seq=shoe_seq)
            return False
        impossible: dict[str, Any] | None = None
        impossible_why = ""
        if code is not None and self.tp is not None and self.round is not None and not self.round_void:
            rnd = self.round
            if self._round_active() or self.state == "settled" or self._phase_state() == "settled":
                seen = sum(1 for c in rnd.cards if c.get("card") == code)
                if seen >= self.tp.decks:  # this one would be one more than the decks hold
                    decks = self.tp.decks
                    impossible = {
                        "shoe_seq": shoe_seq,
                        "card": code,
                        "round_id": rnd.round_id,
                        "decks": decks,
                    }
                    impossible_why = (
                        f"{code} {seen + 1} times in round {rnd.round_id}: {decks} deck(s) hold {decks}"
                    )
        if shoe_seq != last + 1 and shoe_seq != 1 and last != 0:
            missing = shoe_seq - last - 1
            self._record("card_gap", expected=last + 1, got=shoe_seq)
            if missing > 0 and self._round_active():
                self._void("cards came out that the controller did not see", missing=missing)
        # Counted out even when impossible: a card with a fresh number left the machine (a foreign card slipped
        # in, say); the shoe's own count at the resync says whether it did.
        self.shoe["last_seq"] = shoe_seq
        self.shoe["dealt"] += 1
        self.inside = max(0, self.inside - 1)
        self.out += 1
        if impossible is not None:
            self._shoe_line_fault("card_count", impossible_why, **impossible)
            self._alert("card_count", "critical", f"{impossible_why}: {self._SHOE_LINE_ALERT}", **impossible)
            return False  # never dealt
        return True

    def _shoe_line_fault(self, name: str, reason: str, **info: Any) -> None:
        """``shoe_sequence`` / ``card_count`` (issue 13 §5): raised at once, like a jam (PT-2001 r.51): lid
        locked, light on, dealing refused (the caller raises the critical alert); a supervisor clears it
        (``clear_shoe_fault``)."""
        self._record(name, reason=reason, at=self._ts(), state=self.state, **info)
        if name not in self.faults and self.state not in ("closed", "deck_check_failed"):
            self._enter_fault(name, FAULT_TRIGGER[name], {"reason": reason, **info, "cleared_by": None})

    _SHOE_LINE_ALERT = (
        "the card is not dealt; dealing blocked until a supervisor clears it (clear_shoe_fault)"
    )

    def _stray_card(self, code: str, shoe_seq: int, why: str) -> None:
        self._record("card_discarded", card=code, shoe_seq=shoe_seq, reason=why, state=self.state)
        self._alert("dealer_error", "warning", f"{why}: {code} goes to the discard (PT-2001 r.58)", card=code)

    def _deal(self, code: str, shoe_seq: int, face_up: bool, *, late: bool = False) -> None:
        rnd = self.round
        try:
            outcome = rnd.card(code, face_up, to_dealer=late)
        except Exception as exc:  # the engine refused the card: record it, never crash (CONTRIBUTING)
            self._stray_card(code, shoe_seq, f"card refused by the rules engine: {exc}")
            return
        errors = [{"rule": err.rule, "message": err.message} for err in outcome.errors]
        entry = {
            "shoe_seq": shoe_seq,
            "card": code,
            "face_up": face_up,
            "recipient": jsonable(outcome.recipient) if outcome.recipient is not None else "void",
            "counts": outcome.counts,  # PT-2001 r.19: a card drawn on 17+ does not count
            "errors": errors,
        }
        rnd.cards.append(entry)
        self._record("card", round_id=rnd.round_id, **entry)
        self._event("card", **card_event(rnd.round_id, entry, hidden=is_hole_card(rnd.engine, entry)))
        for err in errors:
            # PT-2001 r.19 / MO-2004 art.5.1: raised as it happens, the card that does not count is marked
            self._record("dealer_error", round_id=rnd.round_id, card=code, **err)
            self._event(
                "dealer_error", round_id=rnd.round_id, code=code, reason=err["message"], rule=err["rule"]
            )
            self._alert("dealer_error", "warning", f"{err['rule']}: {err['message']}", card=code)
        if late:  # the round's record (still contestable, r.62) now shows the card that does not count
            self._record_final(rnd.engine.settle(), void=False)
            return
        self._advance()

    # ================================================================ round flow
    def _engine_phase(self) -> str:
        phase = str(self.round.engine.phase)
        return {"initial_deal": "dealing", "insurance": "players", "players": "players"}.get(phase, phase)

    def _phase_state(self) -> str:
        """The round phase the table is in, or was in when a fault interrupted it."""
        return self.resume_to if self.state in m.FAULT_STATES else self.state

    def _go_phase(self, trigger: str, dest: str) -> None:
        """A round phase change; during a fault (a card delivered late) it changes where the table resumes."""
        if self.state in m.FAULT_STATES:
            self.resume_to = dest
        else:
            self._go(trigger)

    def _advance(self) -> None:
        """Move on where the rules leave no choice (deal done, players done, dealer done)."""
        phase = self._engine_phase()
        self._fx.extend(self.jackpot.on_progress(self.round, phase))  # PT-2001 r.42: first 2-4 cards
        if self._phase_state() == "dealing" and phase != "dealing":
            self._fx.extend(self.jackpot.after_initial_deal(self.round.round_id, self.round.cards))
            if phase == "players":
                self._go_phase("initial_dealt", "players")
        if phase == "dealer" and self._phase_state() in ("dealing", "players"):
            self._go_phase("to_dealer", "dealer")
        if phase == "complete":
            self._settle()

    def _settle(self) -> None:
        rnd = self.round
        settlement = jsonable(rnd.engine.settle())
        self._record("round_settled", round_id=rnd.round_id, settlement=settlement)
        self._finish_round(settlement, void=False)
        self._go_phase("settle", "settled")
        self._event("settlement", **settlement_event(rnd.round_id, settlement))
        if self.state == "settled":
            self._after_round()  # else when the fault clears (_resync)

    def _void(self, reason: str, **details: Any) -> None:
        """PT-ONLINE-2015 r.27-28: a round whose cards or result can't be known is void; bets returned."""
        rnd = self.round
        returned = {b["seat"]: b["amount"] + sum((b.get("side_bets") or {}).values()) for b in rnd.bets}
        self._record("round_void", round_id=rnd.round_id, reason=reason, bets_returned=returned, **details)
        self._alert("round_void", "critical", f"round {rnd.round_id} void: {reason} (PT-ONLINE-2015 r.27-28)")
        self.round_void = True
        profile = self.rules_profile
        shoe_burn = profile.burn_before_round(shoe_start=True)
        burnt = sum(1 for c in rnd.cards if c.get("recipient") == "burn")
        if (
            rnd.burn_before_deal == shoe_burn != profile.burn_before_round(shoe_start=False)
            and burnt < shoe_burn
        ):
            # PT-2001 r.10 / MO-2004 art.4.1: the shoe's burn comes before the first deal; a first round voided
            # before it was complete dealt nothing, so the next round burns it again
            self.shoe["first_round"] = True
        self._finish_round({"void": True, "bets_returned": returned}, void=True)
        if self.state in m.FAULT_STATES:
            self.resume_to = "settled"
        else:
            self._go("void")
        self._event("round", round_id=rnd.round_id, phase="void", reason=reason, bets_returned=returned)
        if self.state == "settled":
            self._after_round()

    def _finish_round(self, settlement: Any, *, void: bool) -> None:
        self._record_final(settlement, void=void)
        self.uninserted.append(self.round.round_id)
        self.last_seats = sorted(int(b["seat"]) for b in self.round.bets)

    def _record_final(self, settlement: Any, *, void: bool) -> None:
        """The round's record for export/replay (PT-2001 r.62); a later one for the round supersedes it."""
        rnd = self.round
        try:
            description = jsonable(rnd.engine.description())
        except Exception as exc:  # a void round may be too incomplete to describe
            description = {"error": str(exc)}
        self._record(
            "round_final",
            round_id=rnd.round_id,
            session_id=self.session["id"],
            void=void,
            description=description,
            settlement=jsonable(settlement),
            cards=rnd.cards,
        )

    def _after_round(self) -> None:
        """Continuous shuffler: open the lid automatically for the round's cards (PT-2001 r.59-60)."""
        if self.tp.continuous and self.pending_replacement is not None:
            # PT-2001 r.51: a damaged card awaits the chief inspector (warning light on): no automatic opening
            # meanwhile; the lid cycle starts once the card is replaced (``_sv_replace_card``).
            self._record("lid_cycle_deferred", reason="a damaged card awaits replacement (PT-2001 r.51)")
            return
        if self.tp.continuous:
            self.lid["unlock"] = "auto"
            self.lid["deadline"] = self.now + LID_OPEN_TIMEOUT_S
            self._cmd(ev.OpenLid())

    def _lid_not_opened(self, why: str) -> None:
        """PT-2001 r.61: the cards stay in the discard, to go in with the next round whose lid opens."""
        self.lid["unlock"], self.lid["deadline"] = None, None
        self._cmd(ev.LockLid())
        self._record("lid_not_opened", reason=why, carried=self.uninserted)
        self._event(
            "shoe", procedure="cards_carried", rounds=self.uninserted, reason=why, rule="PT-2001 r.61"
        )

    # ================================================================ dealer inputs
    def _blocked(self) -> None:
        if self.state in m.FAULT_STATES:
            faults = ", ".join(sorted(self.faults)) or "resynchronising with the shoe"
            raise Rejected(f"dealing blocked: {faults} (PT-2001 r.51)")
        if self.pending_replacement is not None:
            raise Rejected(
                "dealing blocked: a damaged card awaits replacement by a chief inspector (PT-2001 r.51)"
            )

    def _dealer(self, action: str, args: dict[str, Any]) -> None:
        self._blocked()
        if action == "place_bet":
            self._place_bet(args)
        elif action == "clear_bet":
            self._need_state("betting", action)
            seat = self._seat(args)
            if self.bets.pop(str(seat), None) is None:
                raise Rejected(f"no bet on seat {seat}")
            if seat in self.chips:
                self.chips.remove(seat)
            self._record("bet_cleared", seat=seat)
        elif action == "jackpot_chip":
            self._need_state("betting", action)
            seat = self._seat(args)
            if str(seat) not in self.bets:
                raise Rejected(f"seat {seat} has no main bet: no jackpot chip (PT-2001 r.45)")
            if seat in self.chips:
                raise Rejected(f"seat {seat} already has its one jackpot chip (PT-2001 r.47)")
            self.jackpot.manual_chip(seat)  # r.41b; refused while the jackpot is unplayable (r.41)
            self.chips.append(seat)
            self._record("jackpot_chip", seat=seat)
        elif action == "no_more_bets":
            self._no_more_bets()
        elif action in PLAY_ACTIONS:
            self._play(action, args)
        elif action == "next_round":
            self._next_round(bool(args.get("reshuffle")))
        elif action == "cut":
            self._cut(args)
        else:
            raise Rejected(f"unknown dealer action {action!r}")

    def _need_state(self, state: str | tuple[str, ...], action: str) -> None:
        states = (state,) if isinstance(state, str) else state
        if self.state not in states:
            raise Rejected(f"{action} is not allowed in state {self.state} (needs {' or '.join(states)})")

    def _seat(self, args: dict[str, Any]) -> int:
        seat = args.get("seat")
        if not isinstance(seat, int) or isinstance(seat, bool) or not 1 <= seat <= self.tp.seats:
            raise Rejected(f"seat must be an integer 1..{self.tp.seats} (PT-2001 r.2), got {seat!r}")
        return seat

    def _place_bet(self, args: dict[str, Any]) -> None:
        self._need_state("betting", "place_bet")
        seat, amount = self._seat(args), args.get("amount")
        tp = self.tp
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise Rejected(f"amount must be an integer in minor units, got {amount!r}")
        rp = self.rules_profile
        if not tp.min_bet <= amount <= tp.max_bet:
            rule = rp.cite("bet_limits") if amount < tp.min_bet else rp.cite("max_bet")
            raise Rejected(f"bet {amount} outside the table limits {tp.min_bet}..{tp.max_bet} ({rule})")
        if rp.multiple_of_min and amount % tp.min_bet:
            # Refused at the bet, not only when the rules engine sees the round at no more bets.
            raise Rejected(
                f"bet {amount} is not a multiple of the minimum {tp.min_bet} ({rp.cite('bet_limits')})"
            )
        side = args.get("side_bets") or {}
        if not isinstance(side, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in side.values()
        ):
            raise Rejected(f"side_bets must map a side bet name to a positive integer amount, got {side!r}")
        self.bets[str(seat)] = {"amount": amount, "side_bets": dict(side)}
        self._record("bet_placed", seat=seat, amount=amount, side_bets=side)
        self._result = {"seat": seat, "amount": amount}

    def _no_more_bets(self) -> None:
        self._need_state("betting", "no_more_bets")
        if not self.bets:
            raise Rejected("no bets on the table: bets come before the first card (PT-2001 r.13)")
        self.round_no += 1
        round_id = f"{self.session['id']}-{self.round_no:04d}"
        main_bets = sorted(int(s) for s in self.bets)
        self.chips, chip_fx = self.jackpot.collect(
            round_id, main_bets, list(self.chips), seats=self.tp.seats, now=self.now
        )  # PT-2001 r.41, r.45, r.47: the chips accepted for this round
        self._fx.extend(chip_fx)
        bets = [
            {
                "seat": int(seat),
                "amount": b["amount"],
                **({"side_bets": b["side_bets"]} if b["side_bets"] else {}),
                **({"jackpot_chip": True} if int(seat) in self.chips else {}),
            }
            for seat, b in sorted(self.bets.items(), key=lambda kv: int(kv[0]))
        ]
        # PT-2001 r.10 / MO-2004 art.4: shoe burn before the first round of a shoe, round burn every round
        burn = self.rules_profile.burn_before_round(shoe_start=self.shoe["first_round"])
        try:
            self.round = RoundTracker(
                round_id,
                self.rules_profile,
                bets,
                burn,
                self.shoe["first_round"],  # MO-2004 art.5.1.1: first card after the shoe-start burns
                engine_factory=self._engine_factory,
                make_card=self._make_card,
            )
        except Exception as exc:  # RuleViolation for the bets
            self.round_no -= 1
            raise Rejected(f"bets refused by the rules: {exc}") from exc
        self.shoe["first_round"] = False
        self.round_void = False
        if self.shoe["last_round"] == "next":
            self.shoe["last_round"] = (
                round_id  # r.11: the warning card came out just before: this is the last
            )
        chips, self.bets, self.chips = list(self.chips), {}, []
        self.session["rounds"] += 1
        self._go("close_bets")
        self._record("round_started", round_id=round_id, bets=bets, burn=burn, jackpot_chips=chips)
        self._event("round", round_id=round_id, phase="dealing", bets=bets, burn=burn)
        self._fx.extend(self.jackpot.on_no_more_bets(round_id, chips))  # r.48: chips collected, then the deal
        self._go("start_deal")
        self._result = {"round_id": round_id}

    def _play(self, action: str, args: dict[str, Any]) -> None:
        self._need_state(("players", "dealing"), action)
        kwargs: dict[str, Any] = {}
        for key in ("amount", "seat", "hand"):
            value = args.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise Rejected(f"{key} must be a non-negative integer, got {value!r}")
            kwargs[key] = value
        engine_action = "no_insurance" if action == "decline_insurance" else action
        try:
            self.round.act(engine_action, kwargs)
        except Exception as exc:  # RuleViolation names the rule
            raise Rejected(str(exc)) from exc
        self._record("dealer_action", round_id=self.round.round_id, action=action, **kwargs)
        self._event("round", round_id=self.round.round_id, phase="decision", action=action, **kwargs)
        self._advance()

    def _next_round(self, early: bool = False) -> None:
        """``early``: the bank reshuffles after this round (MO-2004 art.2.2.2), before the warning card."""
        self._need_state(("settled", "cards_returned"), "next_round")
        if early and (self.tp.continuous or not self.rules_profile.shoe.reshuffle_after_any_round):
            raise Rejected(
                "reshuffle after any round is a shoe rule of MO-2004 art.2.2.2: not for this profile or a "
                "continuous shuffler (the shoe's last round comes with the warning card, PT-2001 r.11)"
            )
        if self.lid["state"] == "open":
            raise Rejected(
                "the lid is open: insert the round's cards and close the lid first (PT-2001 r.59-60)"
            )
        if self.tp.continuous and self.state == "settled" and self.lid["unlock"] == "auto":
            self._lid_not_opened("next round called before the lid opened")
        finished = self.round.round_id if self.round else None
        if not self.tp.continuous:
            self.uninserted = []  # batch shoe: the cards went to the discard; the next round begins
        self.round = None
        if early and finished is not None:
            self._record("reshuffle_requested", after_round=finished, rule="MO-2004 art.2.2.2")
            self.shoe["last_round"] = finished  # the bank's choice: this round closes the shoe
        if not self.tp.continuous and finished is not None and self.shoe["last_round"] == finished:
            self._go("reshuffle")  # r.11 (or MO-2004 art.2.2.2): that was the last round of the shoe
            self._cmd(ev.StartShuffle())
            self._record("reshuffle", after_round=finished)
            return
        self._go("next_round")
        self._record("betting_open")

    def _maybe_skip_cut(self) -> None:
        if self.state == "cut" and self.tp.cut_card == "none":
            self._record("cut", by="none", shoe=self.shoe["no"])
            self._go("cut_done")

    def _cut(self, args: dict[str, Any]) -> None:
        """PT-2001 r.8: the lowest occupied seat cuts; on later shoes the right passes seat by seat; if nobody
        wants to, the inspector. MO-2004 art.2.1.1: any player, or the dealer."""
        self._need_state("cut", "cut")
        if args.get("inspector") or args.get("dealer"):
            by: int | str = "inspector" if args.get("inspector") else "dealer"
            if by == "dealer" and self.tp.cut_card != "any_player_or_dealer":
                raise Rejected(
                    "the dealer does not cut under this profile: a player or the inspector (PT-2001 r.8)"
                )
        else:
            by = self._seat(args)
            prev = self.shoe["cutter"]
            if self.tp.cut_card == "lowest_seat" and prev is not None and self.last_seats:
                # r.8: after an inspector's cut "the next shoe proceeds as at the start of play": the lowest
                # occupied seat again; otherwise the right passes to the next occupied seat after the cutter.
                later = [s for s in self.last_seats if isinstance(prev, int) and s > prev]
                expected = later[0] if later else self.last_seats[0]
                if by != expected:
                    raise Rejected(
                        f"seat {expected} has the right to cut this shoe, not seat {by} (PT-2001 r.8)"
                    )
        self.shoe["cutter"] = by
        self._record("cut", by=by, shoe=self.shoe["no"])
        self._event("shoe", procedure="cut", by=by, shoe=self.shoe["no"], rule="PT-2001 r.8")
        self._go("cut_done")

    # ================================================================ supervisor actions
    def _supervisor(self, user: str, role: str, action: str, args: dict[str, Any]) -> None:
        if not user:
            raise Rejected("supervisor actions must name the user")
        if role not in SUPERVISOR_ROLES and not (role == "technician" and action in TECHNICIAN_ACTIONS):
            rule = "PT-2001 r.49" if action.startswith("jackpot_") else "PT-2001 r.51"  # r.49: verify and pay
            raise Rejected(f"{action} needs a chief inspector (supervisor), not role {role!r} ({rule})")
        handler = getattr(self, f"_sv_{action}", None)
        if handler is None:
            raise Rejected(f"unknown supervisor action {action!r}")
        handler(user, args)
        self._record("supervisor_action", user=user, role=role, action=action, args=args, at=self._ts())

    def _sv_open_table(self, user: str, args: dict[str, Any]) -> None:
        if self.state == "deck_check_failed":
            raise Rejected("the last deck check failed: acknowledge it first (PT-2001 r.55)")
        self._need_state("closed", "open_table")
        blocking = [f for f in m.SERVICE_FAULTS if f in self.faults]
        if blocking:
            why = "; ".join(str(self.faults[f].get("reason", f)) for f in blocking)
            raise Rejected(f"open_table refused: the table is in the {', '.join(blocking)} fault: {why}")
        profile = args.get("profile") or self.profile_name
        if not profile:
            raise Rejected("open_table needs a rule profile")
        if not isinstance(profile, str) or not set(profile) <= PROFILE_NAME_CHARS or len(profile) > 64:
            raise Rejected("open_table takes a rule profile's name (e.g. 'pt-2001'), never a path")
        pinned = args.get("pinned")
        if isinstance(pinned, dict):  # the service's digests and profile text, journaled with open_table
            self.session["pinned"] = dict(pinned)
        default = "continuous" if self.device.get("continuous", True) else "batch"
        shuffler = args.get("shuffler", default)
        if shuffler not in ("continuous", "batch"):
            raise Rejected(f"shuffler must be 'continuous' or 'batch', got {shuffler!r}")
        try:
            self._set_profile(str(profile), shuffler)
        except Exception as exc:
            raise Rejected(f"cannot load profile {profile!r}: {exc}") from exc
        if isinstance(pinned, dict):
            self._record("configuration_pinned", **{k: v for k, v in pinned.items() if k != "profile_text"})
        self._fx.extend(self.jackpot.on_open_table(args, self.rules_profile))  # r.38: config AND profile
        allowed = self.rules_profile.shoe.shufflers
        if (shuffler == "continuous" and "continuous" not in allowed) or (
            shuffler == "batch" and "manual" not in allowed
        ):
            raise Rejected(
                f"profile {profile} does not allow a {shuffler} shoe (allowed: {', '.join(allowed)})"
            )
        self.session.update(
            id=time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.now)),
            no=self.session["no"] + 1,
            packets=0,
            opened_by=user,
            rounds=0,
        )
        self.round_no, self.uninserted, self.bets, self.chips = 0, [], {}, []
        self.inside, self.out = 0, 0
        self._go("open_table")
        if self.tp.continuous:
            self.lid["unlock"] = "loading"  # r.53-54: loaded in packets with the chief inspector present
            self._cmd(ev.UnlockLid())
            self._cmd(ev.OpenLid())
        else:
            self._cmd(ev.StartShuffle())  # batch shoe: shuffled, then cut (PT-2001 r.8)
        self._result = {"session_id": self.session["id"]}

    def _sv_close_table(self, user: str, args: dict[str, Any]) -> None:
        closable = ("loading", "betting", "cut", "settled", "cards_returned")
        from_integrity = self.state == "integrity"  # issue 13 §2: the faulty session ends by closing it
        if from_integrity:
            if self.resume_to not in closable:
                raise Rejected(f"the interrupted round ({self.resume_to}) must be voided first (void_round)")
            returned = self.bets  # placed, nothing dealt on them: returned to the players
            self.bets, self.chips = {}, []
        elif self.state == "betting" and self.bets:
            raise Rejected("bets are on the table: clear them before closing")
        else:
            self._need_state(closable, "close_table")
        self.jackpot.check_close()  # PT-2001 r.49: a winning hand stays until paid
        if self.lid["state"] == "open" and self.state != "loading":
            raise Rejected("the lid is open: insert the cards and close it first (PT-2001 r.59-60)")
        self.lid["deadline"] = None
        if from_integrity:
            info = self.faults.pop("integrity", {})
            self._record(
                "integrity_cleared", user=user, at=self._ts(), fault=info, by="close_table", bets=returned
            )
            self._fault_event("integrity", "cleared", {"by": user})
            self.resume_to = None
            self._go("integrity_close")
        else:
            self._go("close_table")
        self.round = None
        self.session["closed_by"] = user
        if self.out > 0 and self.tp.continuous:  # the discard goes in before the inventory (PT-2001 r.55)
            self.lid["unlock"] = "closing"
            self._cmd(ev.OpenLid())
        elif self.out > 0:
            self._cmd(ev.StartShuffle())  # batch shoe: every card back in
        else:
            self._maybe_deck_check()

    def _closing_count(self, count: int, *, returned: bool) -> None:
        """Closing (PT-2001 r.55): the count once the cards out went back in. ``returned``: the shuffle that
        follows their return (the lid cycle of a continuous shuffler, the batch shoe's reshuffle) is done, so
        cards still missing are a shortfall: flagged, and the inventory names them."""
        self.inside, self.out = count, max(0, self.tp.total_cards - count)
        if returned and self.out > 0 and self.lid["unlock"] is None and self.lid["state"] != "open":
            self._alert(
                "deck_count",
                "critical",
                f"{self.out} card(s) short of {self.tp.total_cards} after every card went back in "
                "(PT-2001 r.55)",
                count=count,
                expected=self.tp.total_cards,
            )
            self._record("deck_shortfall", count=count, expected=self.tp.total_cards)
            self._cmd(ev.RunDeckCheck())
            return
        self._maybe_deck_check()

    def _maybe_deck_check(self) -> None:
        """The inventory needs every card inside, the lid shut and the shuffle done (PT-2001 r.55)."""
        if (
            self.state == "closing"
            and self.out == 0
            and not self.shoe["shuffling"]
            and self.lid["state"] not in ("open", "forced_open")
            and self.lid["unlock"] is None
        ):
            self._cmd(ev.RunDeckCheck())

    def _on_DeckCheckResult(self, e: ev.DeckCheckResult) -> None:
        """PT-2001 r.55: every deck complete: count and per-card inventory."""
        tp = self.tp
        if tp is None:  # no session has loaded a profile: nothing to check the inventory against
            self._record("deck_check_ignored", reason="no rule profile loaded", state=self.state)
            return
        decks = tp.decks
        missing = {c: decks - e.counts.get(c, 0) for c in CARD_CODES if e.counts.get(c, 0) < decks}
        extra = {c: n - decks for c, n in e.counts.items() if _card_valid(c) and n > decks}
        unknown = {c: n for c, n in e.counts.items() if not _card_valid(c) and n}
        total = sum(e.counts.values()) + e.unreadable
        ok = not (missing or extra or unknown or e.unreadable) and total == decks * 52
        self.deck_check = {
            "ok": ok,
            "total": total,
            "missing": missing,
            "extra": extra,  # more copies of a card than decks (duplicated): the name docs/mqtt.md publishes
            "unknown": unknown,
        }
        self.deck_check["unreadable"] = e.unreadable
        self._record("deck_check", state=self.state, **self.deck_check)
        self._event("deck_check", decks=decks, **self.deck_check)
        if self.state != "closing":
            return
        if ok:
            if self.tp.continuous:
                self.lid["unlock"] = "closing"  # cards taken out with the chief inspector present (r.55)
                self._cmd(ev.UnlockLid())
            self._event("session", action="closed", session_id=self.session["id"])
            self._go("deck_ok")
        else:
            self._alert(
                "deck_check",
                "critical",
                "deck check failed: missing, extra or duplicated cards; reopening blocked (PT-2001 r.55)",
                **self.deck_check,
            )
            self._go("deck_bad")

    def _sv_ack_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self._need_state("deck_check_failed", "ack_deck_check")
        self._record("deck_check_acknowledged", user=user, at=self._ts(), deck_check=self.deck_check)
        self._go("ack_deck_check")

    def _sv_run_deck_check(self, user: str, args: dict[str, Any]) -> None:
        self._need_state(("closed", "closing", "deck_check_failed"), "run_deck_check")
        self._cmd(ev.RunDeckCheck())

    def _sv_clear_jam(self, user: str, args: dict[str, Any]) -> None:
        jam = self.faults.get("jam")
        if jam is None:
            raise Rejected("no jam to clear")
        if not jam["device_cleared"]:
            raise Rejected(f"the shoe still reports a jam ({jam['location']}): clear it first (PT-2001 r.51)")
        jam["cleared_by"] = user
        self._record("jam_cleared", user=user, at=self._ts(), location=jam["location"])
        self._clear_fault("jam")

    def _sv_clear_shoe_fault(self, user: str, args: dict[str, Any]) -> None:
        """An authorised person ends a shoe-line fault (``shoe_sequence``, ``card_count``) after looking at the
        shoe; the resync that follows counts the cards inside (cards unaccounted for void the round)."""
        raised = [f for f in ("shoe_sequence", "card_count") if f in self.faults]
        name = args.get("fault") or (raised[0] if len(raised) == 1 else None)
        if name not in raised:
            raise Rejected(
                f"no such shoe-line fault to clear: {args.get('fault')!r} (raised: {raised or 'none'})"
            )
        self.faults[name]["cleared_by"] = user
        self._record("shoe_fault_cleared", fault=name, user=user, at=self._ts())
        self._clear_fault(name)

    def _sv_unlock_lid(self, user: str, args: dict[str, Any]) -> None:
        """Only the machine or an authorised supervisor opens the lid (PT-2001 r.51, r.60)."""
        self.lid["unlock"] = f"supervisor:{user}"
        self._cmd(ev.UnlockLid())

    def _sv_lock_lid(self, user: str, args: dict[str, Any]) -> None:
        if self.lid["state"] in ("open", "forced_open"):
            raise Rejected("the lid is open: close it before locking")
        self.lid["unlock"] = None
        self._cmd(ev.LockLid())
        if "tamper" in self.faults:
            self._record("tamper_cleared", user=user, at=self._ts())
            self._clear_fault("tamper")

    def _sv_replace_card(self, user: str, args: dict[str, Any]) -> None:
        """PT-2001 r.51: a damaged card is replaced at once by a chief inspector and reported."""
        pending = self.pending_replacement
        if pending is None:
            raise Rejected("no damaged or unreadable card awaits replacement")
        code = str(args.get("card", "")).upper()
        if not _card_valid(code):
            raise Rejected(f"card must be a code like 'AS' or 'TD', got {args.get('card')!r}")
        self.pending_replacement = None
        report = {"shoe_seq": pending["shoe_seq"], "damaged": pending["damaged"], "card": code, "user": user}
        self._record("card_replaced", at=self._ts(), **report)
        at = len(self._fx)  # the report goes before the card's own events, as it happens
        hidden = False
        rnd = self.round
        if self._round_active() and self._phase_state() in ("dealing", "players", "dealer"):
            self._deal(code, pending["shoe_seq"], False)
            last = rnd.cards[-1] if rnd.cards else None
            hidden = bool(last and last["shoe_seq"] == pending["shoe_seq"] and is_hole_card(rnd.engine, last))
        elif self.state == "settled" and self.uninserted and self.lid["unlock"] is None:
            self._after_round()  # the lid cycle deferred while the card awaited replacement (r.51, r.59)
        # Reported to the inspection service (r.51); a replacement that became the dealer's face-down hole
        # card is withheld like its events/card until the dealer turns it over (PT-2001 r.17).
        shown = ({k: v for k, v in report.items() if k != "card"} | {"hidden": True}) if hidden else report
        self._fx.insert(
            at, Publish(event_topic("shoe"), "shoe", jsonable({"procedure": "card_replaced", **shown}))
        )

    def _sv_void_round(self, user: str, args: dict[str, Any]) -> None:
        if not self._round_active():
            raise Rejected("no round in progress to void")
        self.pending_replacement = None
        self._void(str(args.get("reason") or f"voided by supervisor {user}"), user=user)

    def _sv_ack_alert(self, user: str, args: dict[str, Any]) -> None:
        self._record("alert_acknowledged", user=user, alert=args)

    def _sv_jackpot_verify(self, user: str, args: dict[str, Any]) -> None:
        self._fx.extend(self.jackpot.supervisor("jackpot_verify", user, args, between_rounds=False))

    def _sv_jackpot_pay(self, user: str, args: dict[str, Any]) -> None:
        self._fx.extend(self.jackpot.supervisor("jackpot_pay", user, args, between_rounds=False))

    def _sv_jackpot_correct(self, user: str, args: dict[str, Any]) -> None:
        between = not self._round_active() and self.state not in ("dealing", "players", "dealer")
        self._fx.extend(self.jackpot.supervisor("jackpot_correct", user, args, between_rounds=between))

    def _sv_clear_journal_io(self, user: str, args: dict[str, Any]) -> None:
        """The journal writes again (this action's own commit proves it): the fault ends, the cards are
        counted (resync) as after any fault; an authorised person decides it, as for a jam (PT-2001 r.51)."""
        info = self.faults.get("journal_io")
        if info is None:
            raise Rejected("no journal_io fault to clear")
        self._record("journal_io_cleared", user=user, at=self._ts(), fault=info)
        self._clear_service_fault("journal_io", user)

    def _sv_clear_integrity(self, user: str, args: dict[str, Any]) -> None:
        """On a closed table only; in a session the supervisor closes the table (close_table) instead."""
        info = self.faults.get("integrity")
        if info is None:
            raise Rejected("no integrity fault to clear")
        if self.state not in NO_SESSION:
            raise Rejected("the integrity fault of an open session ends when a supervisor closes the table")
        self._record("integrity_cleared", user=user, at=self._ts(), fault=info, by="clear_integrity")
        self._clear_service_fault("integrity", user)

    # ================================================================ faults
    def _journal_fault(self, kind: str, text: str) -> None:
        """Issue 14 item 3: a journal write failed. Lid locked (GPIO and the shoe), light on, dealing refused,
        a critical alert. The shell publishes these effects without the journal and commits them once it can."""
        info = {"kind": kind, "reason": text, "at": self._ts()}
        if "journal_io" in self.faults:
            self.faults["journal_io"] = info
            return
        self._lock_for_service_fault()
        self._enter_service_fault("journal_io", "journal_failed", info)
        self._alert(
            "journal_io",
            "critical",
            f"{text}: nothing more can be recorded; dealing refused, lid locked until a supervisor clears it",
            kind=kind,
        )

    def _integrity_fault(self, reason: str, details: dict[str, Any]) -> None:
        """Issue 13 §1-2: the journal chain, a snapshot or the configuration pinned by the session does not
        check out. Dealing refused until a supervisor closes the table (clear_integrity when closed)."""
        info = {"reason": reason, "at": self._ts(), **details}
        if "integrity" in self.faults:
            self.faults["integrity"] = info
            return
        self._lock_for_service_fault()
        self._enter_service_fault("integrity", "integrity_failed", info)
        self._alert(
            "integrity",
            "critical",
            f"{reason}: dealing refused until a supervisor closes the table",
            **details,
        )

    def _lock_for_service_fault(self) -> None:
        if self.lid["unlock"] not in (None, "auto"):  # "auto": _enter_fault ends the lid cycle itself
            self.lid["unlock"] = None
            self._cmd(ev.LockLid())

    def _enter_service_fault(self, name: str, trigger: str, info: dict[str, Any]) -> None:
        if self.state in NO_SESSION:  # listed in state/table.faults, light on, open_table refused
            self.faults[name] = info
            self._fault_event(name, "raised", info)
            return
        self._enter_fault(name, trigger, info)

    def _clear_service_fault(self, name: str, user: str) -> None:
        if self.state in NO_SESSION:  # no session: nothing to resume or count
            self.faults.pop(name, None)
            self._fault_event(name, "cleared", {"by": user})
            return
        self._clear_fault(name)

    def _enter_fault(self, name: str, trigger: str, info: dict[str, Any]) -> None:
        if self.state not in m.FAULT_STATES:
            self.resume_to = self.state
        self.faults[name] = info
        if self.state != "closed":
            self._go(trigger)
        self.lid["deadline"] = None
        if self.lid["unlock"] == "auto":
            self._lid_not_opened(f"{name} during the lid cycle")
        self._fault_event(name, "raised", info)

    def _clear_fault(self, name: str) -> None:
        self.faults.pop(name, None)
        self._fault_event(name, "cleared", {})
        if self.faults:  # another fault remains: show it
            other = sorted(self.faults)[0]
            self._go(FAULT_TRIGGER[other])
            return
        self._go("fault_cleared")
        self._cmd(ev.ReportCounts())  # resync: are all the round's cards accounted for?

    def _resync(self, count: int) -> None:
        """After a fault or a restart: if cards left the machine unseen, the round cannot be determined."""
        expected = self.inside
        self.inside = count
        self._record("resync", expected=expected, count=count, resume_to=self.resume_to)
        if count < expected and self.shoe["last_seq"]:
            # The cards that left unseen took their shoe_seq numbers with them: the next card seen follows
            # them, not a gap (else the next round would be voided for this round's loss, issue 14 item 2).
            self.shoe["last_seq"] += expected - count
            self.shoe["dealt"] += expected - count
        if count != expected:
            if self.round is not None and self.resume_to in m.ROUND_ACTIVE:
                self._void(f"{expected - count} card(s) unaccounted for after the fault", expected=expected)
            else:
                self._alert(
                    "shoe_count", "warning", f"shoe reports {count} cards inside, expected {expected}"
                )
            self.out = max(0, self.out + expected - count)
        unlock = self.lid["unlock"] or ""
        if unlock.startswith("supervisor") and self.lid["state"] not in ("open", "forced_open"):
            self.lid["unlock"] = None  # the inspector's opening is over: locked again (PT-2001 r.60)
            self._cmd(ev.LockLid())
        target = self.resume_to or "closed"
        self.resume_to = target
        self._go("resume")
        self.resume_to = None
        if target == "settled" and self.tp.continuous and self.uninserted and self.lid["unlock"] is None:
            self._after_round()  # the lid cycle the fault interrupted, or the voided round's (r.59)
        self._resume_procedure(target, count)

    def _resume_procedure(self, target: str, count: int) -> None:
        """Go on with the shoe procedure the fault interrupted. Its end (``ShuffleFinished``, the deck check)
        may have been reported during the fault, where it could not move the table on, or its lid opening
        may have been cancelled by a restart: without this the table would wait for it for ever."""
        tp = self.tp
        if tp is None or self.shoe["shuffling"] or self.lid["state"] in ("open", "forced_open"):
            return  # a shuffle still running reports its end; an open lid is closed first
        if target == "shuffling" or (target == "loading" and not tp.continuous):
            self._record("shuffle_requested_again", state=target)  # batch shoe: shuffled, then cut (r.8)
            self._cmd(ev.StartShuffle())
        elif target == "loading":
            if self.session["packets"]:
                self._check_loaded(count)  # loaded and shuffled before or during the fault (r.53-54)
            elif self.lid["unlock"] is None:  # a restart locked the lid before any packet went in
                self.lid["unlock"] = "loading"
                self._cmd(ev.UnlockLid())
                self._cmd(ev.OpenLid())
        elif target == "closing":
            if self.out > 0 and self.lid["unlock"] is None:
                if tp.continuous:  # the discard goes in before the inventory (PT-2001 r.55)
                    self.lid["unlock"] = "closing"
                    self._cmd(ev.OpenLid())
                else:
                    self._cmd(ev.StartShuffle())  # batch shoe: every card back in
            else:
                self._maybe_deck_check()

    def _restart(self) -> None:
        """The service restarted: the lid was re-locked by the shell; count the cards before going on."""
        self._record("restart", state=self.state, round_id=self.round.round_id if self.round else None)
        if self.lid["unlock"] == "auto":
            self._lid_not_opened("controller restarted during the lid cycle")
            # The shoe may have opened it before the restart: that LidChanged comes again now (protocol v2
            # replays what was acked but not committed, docs/protocol.md §5a) and is this opening, not tamper.
            self.lid["auto_before_restart"] = True
        self.lid["unlock"], self.lid["deadline"] = None, None
        self.outputs = {"lid_lock": True, "warning_light": True}  # the shell applied the safe state
        if "link_down" in self.faults:
            self.faults["link_down"]["restored"] = False  # this process has not heard the shoe yet
        self._fx.extend(self.jackpot.on_restart())  # the jackpot sign must answer the new process first
        if self.tp and self.tp.continuous and self.lid["state"] not in ("open", "forced_open"):
            self._cmd(ev.LockLid())
        if self.state in m.GROUPS["active"]:
            self.resume_to = self.state
            self._go("restarted")
            self._cmd(ev.ReportCounts())
        elif self.state == "resync":
            self._cmd(ev.ReportCounts())

    def _tick(self) -> None:
        deadline = self.lid["deadline"]
        due = self.lid["unlock"] == "auto" and deadline is not None and self.now >= deadline
        if due and self.lid["state"] != "open":
            self._lid_not_opened("lid did not open after the round")

    def _gpio(self, name: str, value: bool) -> None:
        if name == "lid_switch":  # True: the lid is open
            self._record("lid_switch", open=value)
            if value and self.lid["unlock"] is None:
                self._tamper("lid switch open while the lid is locked (PT-2001 r.60)")
        elif name.startswith("chip_slot_") and name[len("chip_slot_") :].isdigit():  # PT-2001 r.41a
            rnd = self.round if self._round_active() else None
            self._fx.extend(
                self.jackpot.on_chip_sensor(
                    int(name[len("chip_slot_") :]),
                    value,
                    betting=self.state == "betting",
                    round_id=rnd.round_id if rnd else None,
                    seats=self.tp.seats if self.tp else 0,
                    now=self.now,
                )
            )
        else:
            self._record("gpio_input", name=name, value=value)

    def _command_failed(self, command: str, text: str, link: bool = False) -> None:
        self._record("command_failed", command=command, text=text, link=link)
        if command == "OpenLid" and self.lid["unlock"] == "auto" and self.lid["state"] != "open":
            self._lid_not_opened(f"OpenLid failed: {text}")
        elif link:
            return  # link faults have their own alert
        elif command == "LockLid":  # the lid may be free to open: the floor must know at once (PT-2001 r.60)
            self._alert(
                "shoe_command",
                "critical",
                f"the shoe did not lock its lid (LockLid failed: {text}) (PT-2001 r.60)",
                command=command,
            )
        else:  # incl. SetWarningLight: the shoe's own light; the table's light is the GPIO output
            self._alert("shoe_command", "warning", f"shoe command {command} failed: {text}", command=command)
