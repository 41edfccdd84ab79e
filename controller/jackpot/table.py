"""The progressive jackpot inside the table core (PT-2001 r.38-50): the real ``JackpotSeam``
(controller/jackpot/seam.py), composed of its chip slots (slots.py, ``ChipSlots``) and its supervisor's desk
(supervision.py, ``JackpotSupervisor``, with the meter corrections in correction.py); the round's hits are
awarded in award.py, its effects made in records.py. The service's I/O for it (chip-slot sensors, the sign) is
controller/service/jackpot.py.

Pure like the core (no I/O, no clock): every hook returns effects (journal records, ``events/jackpot``
publishes, alerts) that the shell commits in the SAME transaction as the input that caused them, and the whole
jackpot state (meter, pending hits, the round's chips, the chip-slot levels, the display link) is part of the
core's snapshot. So after a crash the meter is rebuilt exactly from snapshot + journaled inputs.

Inputs that reach it (all journaled by the shell):
- ``open_table`` args ``jackpot``: the table config's ``[jackpot]`` section (``JackpotConfig.to_dict()``),
  injected by the service; enabled only if the config says so AND the profile allows a jackpot (PT-2001 r.38).
  Parameter changes are applied there, i.e. between rounds (``meter.reconfigure``).
- ``GpioInput("chip_slot_<seat>", value)`` (controller/table/inputs.py): automatic mode (r.41a) chip sensors.
- dealer ``jackpot_chip {seat}``: manual mode (r.41b).
- ``JackpotDisplay(connected)``: the sign's link; without it the jackpot is unplayable.
- supervisor ``jackpot_verify {hit_id[, valid, reason]}``, ``jackpot_pay {hit_id}``,
  ``jackpot_correct {value, reason}`` and a second supervisor's ``jackpot_correct_confirm {correction_id}``.
- with ``[jackpot] link``: ``JackpotLink(up, reason)`` (the link's meter documents valid or not) and
  ``LinkHitAwarded`` (a prize the link's controller froze for a hit here); linked.py, ``LinkedJackpot``.
"""

from __future__ import annotations

from typing import Any

from controller.effects import Effect, JournalRecord, Rejected
from controller.jackpot import JackpotError
from controller.jackpot import meter as mt
from controller.jackpot.availability import playable
from controller.jackpot.award import award, decided_cards
from controller.jackpot.config import JackpotConfig
from controller.jackpot.linked import LinkAward, LinkedJackpot
from controller.jackpot.records import RECORD_KIND, alert, event, meter_record
from controller.jackpot.seam import JackpotSeam
from controller.jackpot.slots import ChipSlots, Playability
from controller.jackpot.supervision import JackpotSupervisor


class TableJackpot(JackpotSeam):
    """The table's jackpot. Construct with no arguments; the config arrives with ``open_table``.

    It owns the configuration, the meter, the sign's link and the round's chip seats; its chip slots
    (``ChipSlots``) and its supervisor's desk (``JackpotSupervisor``) own their own slices of the state.
    """

    def __init__(self) -> None:
        self.restore(None)

    # ================================================================ state
    def restore(self, data: dict[str, Any] | None) -> None:
        d = data or {}
        self.config: JackpotConfig | None = (
            JackpotConfig.from_dict(d["config"]) if d.get("config") is not None else None
        )
        self.enabled: bool = bool(d.get("enabled", False))
        self.disabled_reason: str = str(d.get("disabled_reason", "no jackpot configured for this table"))
        self.meter: mt.MeterState | None = (
            mt.MeterState.from_dict(d["meter"]) if d.get("meter") is not None else None
        )
        self.display_ok: bool = bool(d.get("display_ok", False))
        self.slots = ChipSlots(d)
        self.round: dict[str, Any] | None = d.get("round")  # {"round_id", "seats", "frozen"}
        self.desk = JackpotSupervisor(d)
        link = d.get("link")  # a linked progressive's table side (linked.py); absent: the table's own meter
        self.linked: LinkedJackpot | None = LinkedJackpot(str(link["name"]), link) if link else None

    def snapshot(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict() if self.config else None,
            "enabled": self.enabled,
            "disabled_reason": self.disabled_reason,
            "meter": self.meter.to_dict() if self.meter else None,
            "display_ok": self.display_ok,
            **self.slots.snapshot(),
            "round": dict(self.round) if self.round else None,
            **self.desk.snapshot(),
            **({"link": self.linked.snapshot()} if self.linked is not None else {}),
        }

    def meter_units(self) -> int | None:
        return self.meter.meter_units if self.meter is not None else None

    def pending_correction(self) -> dict[str, Any] | None:
        """The meter correction awaiting its second supervisor (``jackpot_correct_confirm``), if any."""
        return self.desk.corrections.pending()

    # ================================================================ views
    @property
    def playable(self) -> bool:
        """Chips accepted only when enabled, no hit pending and the sign connected (PT-2001 r.41, r.49); linked:
        the link up (a valid meter document within ``link_timeout_s``) instead of the table's own meter."""
        if self.linked is not None:
            return self.enabled and self.linked.blocking is None and self.display_ok
        return self.enabled and self.meter is not None and playable(self.meter.ok, self.display_ok)

    @property
    def reason(self) -> str:
        if self.linked is not None and self.enabled:
            blocking = self.linked.blocking
            if blocking is not None:
                return blocking
            return "ok" if self.display_ok else "jackpot display not connected (PT-2001 r.41)"
        if not self.enabled or self.meter is None:
            return self.disabled_reason
        if not self.meter.ok:
            return "jackpot hit pending verification (PT-2001 r.49)"
        if not self.display_ok:
            return "jackpot display not connected (PT-2001 r.41)"
        return "ok"

    def _playability(self) -> Playability:
        mode = self.config.mode if self.enabled and self.config is not None else None
        return Playability(mode, self.playable, self.reason)

    def state_doc(self) -> dict[str, Any] | None:
        """Data of the retained ``state/jackpot`` (schemas/mqtt/state_jackpot.schema.json)."""
        m, cfg = self.meter, self.config
        if self.linked is not None:
            return self._linked_doc(self.linked)
        correction = self.desk.corrections.doc()
        return {
            "enabled": self.enabled,
            "mode": str(cfg.mode) if cfg else None,
            "currency": m.currency if m else None,
            "bet_value": m.bet_value if m else None,
            "meter": m.display_value if m else None,
            "playable": self.playable,
            "reason": self.reason,
            "display_connected": self.display_ok,
            "chips_sensed": self.slots.sensed(),  # slots now (r.41a)
            "pending_hits": [self._hit_doc(h) for h in (m.pending if m else ())],
            "flagged_seats": m.flagged_seats() if m else [],  # PT-2001 r.49: hands that stay on the table
            **({"pending_correction": correction} if correction is not None else {}),
        }

    def _linked_doc(self, linked: LinkedJackpot) -> dict[str, Any]:
        """``state/jackpot`` of a linked table: no meter of its own (the sign shows the link's), the link."""
        cfg = self.config
        return {
            "enabled": self.enabled,
            "mode": str(cfg.mode) if cfg else None,
            "currency": cfg.currency if cfg else None,
            "bet_value": cfg.bet_value if cfg else None,
            "meter": None,
            "playable": self.playable,
            "reason": self.reason,
            "display_connected": self.display_ok,
            "chips_sensed": self.slots.sensed(),
            "pending_hits": linked.pending_docs(),
            "flagged_seats": linked.flagged_seats(),  # PT-2001 r.49
            "link": linked.doc(),
        }

    def round_doc(self, round_id: str | None) -> dict[str, Any]:
        """Extra fields of ``state/round``: this round's winning hands, flagged until paid (PT-2001 r.49)."""
        if self.linked is not None and round_id is not None:
            hits = [h for h in self.linked.pending_docs() if h["round_id"] == round_id]
            return {"jackpot_hits": hits} if hits else {}
        if round_id is None or self.meter is None:
            return {}
        hits = [self._hit_doc(h) for h in self.meter.pending if h.round_id == round_id]
        return {"jackpot_hits": hits} if hits else {}

    def _hit_doc(self, h: mt.PendingHit) -> dict[str, Any]:
        return {
            "hit_id": h.hit_id,
            "round_id": h.round_id,
            "seat": h.seat,
            "combination": h.combination,
            "amount": h.amount,
            "top": h.top,
            "verified": self.desk.is_verified(h.hit_id),
        }

    # ================================================================ configuration (open_table)
    def on_open_table(self, args: dict[str, Any], profile: Any) -> list[Effect]:
        """Enable (config AND profile, PT-2001 r.38) and apply parameter changes: a table opening is between
        rounds (``meter.reconfigure``). Raises ``Rejected`` naming what is wrong."""
        fx: list[Effect] = []
        cfg = self.config
        if "jackpot" in args:  # absent: keep the last configuration; None: no jackpot at this table
            raw = args["jackpot"]
            try:
                cfg = None if raw is None else JackpotConfig.from_dict(raw)
            except JackpotError as exc:
                raise Rejected(f"jackpot configuration refused: {exc}") from None
        allowed = bool(getattr(profile, "jackpot_allowed", False))
        enabled, why = False, f"profile {getattr(profile, 'name', '?')} has no progressive jackpot"
        if cfg is None:
            why = "no jackpot configured for this table"
        elif not cfg.enabled:
            why = "jackpot disabled in the table configuration"
        elif allowed:
            enabled = True
        meter = self.meter
        if cfg is not None and cfg.linked:  # the link's controller keeps the meter: none here
            self._join(cfg)
            self.config, self.enabled, self.disabled_reason = cfg, enabled, why
            fx.append(JournalRecord("jackpot_config", {"enabled": self.enabled, "reason": self.reason,
                                                       "link": cfg.link}))  # fmt: skip
            return fx
        if self.linked is not None:
            self._leave()
        if enabled and cfg is not None and meter is None:
            meter = mt.MeterState.initial(cfg)  # PT-2001 r.44: starts at the seed
            fx.append(JournalRecord(RECORD_KIND, {"kind": "seed", "meter_units": meter.meter_units}))
            event(fx, "reset", meter=meter.display_value, seed=cfg.seed, reason="initial seed")
        elif enabled and cfg is not None and meter is not None and self._differs(meter, cfg):
            try:
                meter, rec = mt.reconfigure(meter, cfg, between_rounds=True)
            except JackpotError as exc:
                raise Rejected(f"jackpot parameters: {exc}") from None
            meter_record(fx, rec, meter)
            event(fx, "reconfigured", changes=rec.data["changes"])
        # Nothing changed above this line: a refusal leaves the seam as it was.
        self.config, self.meter, self.enabled, self.disabled_reason = cfg, meter, enabled, why
        fx.append(JournalRecord("jackpot_config", {"enabled": self.enabled, "reason": self.reason}))
        return fx

    def _join(self, cfg: JackpotConfig) -> None:
        """Join ``cfg.link`` (or stay on it). Raises ``Rejected`` while a hit is unpaid (PT-2001 r.49)."""
        if self.meter is not None and self.meter.pending:
            raise Rejected("a jackpot hit of the table's own meter is pending: pay it before joining a link")
        if self.linked is not None and self.linked.link != cfg.link:
            self._leave()
        if self.linked is None:
            assert cfg.link is not None
            self.linked = LinkedJackpot(cfg.link)

    def _leave(self) -> None:
        assert self.linked is not None
        if self.linked.hits:
            raise Rejected(
                f"a hit on the link {self.linked.link} is unpaid: pay it before leaving the link (r.49)"
            )
        self.linked = None

    @staticmethod
    def _differs(m: mt.MeterState, cfg: JackpotConfig) -> bool:
        mine = (m.bet_value, m.increment_bp, m.reserve_bp, m.seed, m.currency)
        return mine != (cfg.bet_value, cfg.increment_bp, cfg.reserve_bp, cfg.seed, cfg.currency)

    def check_close(self) -> None:
        """A winning hand stays on the table until paid (PT-2001 r.49): no closing with a hit pending."""
        if (self.linked is not None and self.linked.hits) or (self.meter is not None and self.meter.pending):
            raise Rejected("a jackpot hit is pending: verify and pay it before closing (PT-2001 r.49)")

    # ================================================================ chips (slots.py)
    def manual_chip(self, seat: int) -> None:
        """Dealer entry (manual mode, PT-2001 r.41b); the core checks r.45 and r.47. Raises ``Rejected``."""
        self.slots.manual_chip(self._playability())

    def on_chip_sensor(
        self, seat: int, present: bool, *, betting: bool, round_id: str | None, seats: int, now: float
    ) -> list[Effect]:
        """A debounced chip-slot change (PT-2001 r.41a, r.48)."""
        return self.slots.on_sensor(
            self._playability(), seat, present, betting=betting, round_id=round_id, seats=seats
        )

    def collect(
        self, round_id: str, main_bets: list[int], manual: list[int], *, seats: int, now: float
    ) -> tuple[list[int], list[Effect]]:
        """At "no more bets": the seats whose jackpot chip is accepted (PT-2001 r.41, r.45, r.47, r.48)."""
        return self.slots.collect(self._playability(), round_id, main_bets, manual, seats=seats, now=now)

    def on_no_more_bets(self, round_id: str, chips: list[int]) -> list[Effect]:
        """The collected chips increment the meter (PT-2001 r.41), in the round's own transaction."""
        fx: list[Effect] = []
        self.round = {"round_id": round_id, "seats": sorted(chips), "frozen": False} if chips else None
        if chips and self.linked is not None and self.config is not None:
            return self.linked.contribution(
                round_id, sorted(chips), self.config.bet_value, self.config.currency
            )
        if not chips or self.meter is None:
            return fx
        try:
            self.meter, rec = mt.contribute(self.meter, len(chips), round_id)
        except JackpotError as exc:  # collect() refuses while unplayable, so this is a bug: refuse the input
            raise Rejected(f"jackpot contribution refused: {exc}") from None
        meter_record(fx, rec, self.meter, seats=sorted(chips))
        event(
            fx,
            "contribution",
            round_id=round_id,
            seats=sorted(chips),
            chips=len(chips),
            meter=self.meter.display_value,
            currency=self.meter.currency,
        )
        return fx

    # ================================================================ hits
    def on_progress(self, tracker: Any, phase: str) -> list[Effect]:
        """After each card/decision: once every chip seat's first cards are decided (PT-2001 r.42), or no
        more cards go to the players, evaluate, allocate (r.50) and freeze the awards as pending (r.49)."""
        rnd = self.round
        if rnd is None or rnd["frozen"] or rnd["round_id"] != tracker.round_id:
            return []
        if self.meter is None and self.linked is None:
            return []
        cards = decided_cards(tracker, rnd["seats"], phase)
        if cards is None:
            return []
        rnd["frozen"] = True
        reading = getattr(tracker.engine.profile, "jackpot_different_suits", "not_all_one")  # r.43c
        if self.linked is not None:  # reported without an amount: the link's controller freezes the prize
            return self.linked.report(rnd["round_id"], cards, reading)
        assert self.meter is not None
        self.meter, fx = award(self.meter, rnd["round_id"], cards, reading)
        return fx

    # ================================================================ the link (linked.py)
    def on_link(self, up: bool, reason: str, seq: int) -> list[Effect]:
        """The link's meter documents valid (up) or not for ``link_timeout_s``, or the link suspended."""
        if self.linked is None:
            raise Rejected("this table is on no link ([jackpot] link)")
        return self.linked.on_status(up, reason, seq)

    def on_link_award(self, link: str, award: Any) -> list[Effect]:
        """A signed meter document lists a prize for a hit at this table (PT-2001 r.49)."""
        if self.linked is None or self.config is None or link != self.linked.link:
            raise Rejected(f"this table is not on the link {link!r}")
        a = LinkAward(
            award.hit_id, award.round_id, award.seat, award.combination, award.amount_minor, award.order
        )
        return self.linked.award(a, self.config.currency)

    # ================================================================ display link
    def on_display(self, connected: bool) -> list[Effect]:
        """The sign's link (an input, so it is journaled and replayed): lost → unplayable (PT-2001 r.41)."""
        fx: list[Effect] = []
        if connected == self.display_ok:
            return fx
        self.display_ok = connected
        fx.append(JournalRecord("jackpot_display", {"connected": connected}))
        if not connected and self.enabled:
            alert(
                fx,
                "display_fault",
                "warning",
                "jackpot display lost: jackpot chips refused until it is back (PT-2001 r.41)",
                rule="PT-2001 r.41",
            )
        return fx

    def on_restart(self) -> list[Effect]:
        """A new process: the sign must answer again before the jackpot is playable (no alert: not lost)."""
        fx: list[Effect] = []
        if self.linked is not None and self.linked.up:  # the link must show a valid document to this process
            self.linked.up, self.linked.reason = False, "restart: waiting for a meter document"
            fx.append(
                JournalRecord("jackpot_link", {"link": self.linked.link, "up": False, "reason": "restart"})
            )
        if not self.display_ok:
            return fx
        self.display_ok = False
        return [*fx, JournalRecord("jackpot_display", {"connected": False, "reason": "restart"})]

    # ================================================================ the supervisor (supervision.py)
    def supervisor(
        self, action: str, user: str, args: dict[str, Any], *, between_rounds: bool, now: float = 0.0
    ) -> list[Effect]:
        """``jackpot_verify``, ``jackpot_pay``, ``jackpot_correct``, ``jackpot_correct_confirm`` (PT-2001 r.49-50)."""
        if self.linked is not None and self.config is not None:
            return self.linked.act(action, user, args, self.config.currency)
        if self.meter is None:
            raise Rejected(f"{action}: {self.disabled_reason}")
        self.meter, fx = self.desk.act(
            action, user, args, self.meter, self.config, between_rounds=between_rounds, now=now
        )
        return fx
