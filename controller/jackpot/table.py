"""The progressive jackpot inside the table core (PT-2001 r.38-50): the real ``JackpotSeam``
(controller/jackpot/seam.py). The supervisor's actions are in supervision.py, the service's I/O for it
(chip-slot sensors, the sign) in wiring.py.

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
"""

from __future__ import annotations

from typing import Any

from controller.effects import Alert, Effect, Event, EventKind, JournalRecord, Rejected
from controller.jackpot import JackpotError
from controller.jackpot import meter as mt
from controller.jackpot.availability import playable
from controller.jackpot.chips import ChipEvent, Refusal, RoundChips
from controller.jackpot.config import JackpotConfig, Mode
from controller.jackpot.hits import Combination, allocate, decided, evaluate
from controller.jackpot.seam import JackpotSeam
from controller.jackpot.supervision import JackpotSupervision
from controller.rules.round_state import OPEN
from controller.words import COMBINATION_WORDS, money, words

RECORD_KIND = "jackpot"  # every meter change: MeterRecord + the meter after it, one journal record each
UNPLAYABLE = "unplayable"  # chip_refused reason when the jackpot cannot be played (display lost, hit pending)


class TableJackpot(JackpotSupervision, JackpotSeam):
    """The table's jackpot. Construct with no arguments; the config arrives with ``open_table``."""

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
        self.levels: dict[str, bool] = dict(d.get("levels", {}))  # chip-slot sensor level per seat (r.41a)
        self.flagged: list[int] = list(d.get("flagged", []))  # refused as unplayable in this betting window
        self.round: dict[str, Any] | None = d.get("round")  # {"round_id", "seats", "frozen"}
        self.verified: list[int] = list(d.get("verified", []))  # hit ids a supervisor verified
        # the last settled hits, "<hit_id>" -> "paid by X" / "rejected by X": a hit is never paid twice (r.49)
        self.settled: dict[str, str] = dict(d.get("settled", {}))
        # the correction awaiting a second supervisor (supervision.py); kept in the snapshot only when there
        # is one or was one, so a table that never corrected its meter keeps the snapshot it always had
        self.correction: dict[str, Any] | None = d.get("correction")
        self.correction_seq: int = int(d.get("correction_seq", 0))

    def snapshot(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict() if self.config else None,
            "enabled": self.enabled,
            "disabled_reason": self.disabled_reason,
            "meter": self.meter.to_dict() if self.meter else None,
            "display_ok": self.display_ok,
            "levels": dict(self.levels),
            "flagged": list(self.flagged),
            "round": dict(self.round) if self.round else None,
            "verified": list(self.verified),
            "settled": dict(self.settled),
            **({"correction": dict(self.correction)} if self.correction else {}),
            **({"correction_seq": self.correction_seq} if self.correction_seq else {}),
        }

    def meter_units(self) -> int | None:
        return self.meter.meter_units if self.meter is not None else None

    def pending_correction(self) -> dict[str, Any] | None:
        """The meter correction awaiting its second supervisor (``jackpot_correct_confirm``), if any."""
        return dict(self.correction) if self.correction else None

    # ================================================================ views
    @property
    def playable(self) -> bool:
        """Chips accepted only when enabled, no hit pending and the sign connected (PT-2001 r.41, r.49)."""
        return self.enabled and self.meter is not None and playable(self.meter.ok, self.display_ok)

    @property
    def reason(self) -> str:
        if not self.enabled or self.meter is None:
            return self.disabled_reason
        if not self.meter.ok:
            return "jackpot hit pending verification (PT-2001 r.49)"
        if not self.display_ok:
            return "jackpot display not connected (PT-2001 r.41)"
        return "ok"

    def state_doc(self) -> dict[str, Any] | None:
        """Data of the retained ``state/jackpot`` (schemas/mqtt/state_jackpot.schema.json)."""
        m, cfg = self.meter, self.config
        return {
            "enabled": self.enabled,
            "mode": str(cfg.mode) if cfg else None,
            "currency": m.currency if m else None,
            "bet_value": m.bet_value if m else None,
            "meter": m.display_value if m else None,
            "playable": self.playable,
            "reason": self.reason,
            "display_connected": self.display_ok,
            "chips_sensed": sorted(int(s) for s, here in self.levels.items() if here),  # slots now (r.41a)
            "pending_hits": [self._hit_doc(h) for h in (m.pending if m else ())],
            "flagged_seats": m.flagged_seats() if m else [],  # PT-2001 r.49: hands that stay on the table
            **({"pending_correction": self._correction_doc()} if self.correction else {}),
        }

    def _correction_doc(self) -> dict[str, Any]:
        c = self.correction or {}
        keys = ("correction_id", "by", "value", "reason", "old_meter", "expires_at")
        return {k: c[k] for k in keys}

    def round_doc(self, round_id: str | None) -> dict[str, Any]:
        """Extra fields of ``state/round``: this round's winning hands, flagged until paid (PT-2001 r.49)."""
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
            "verified": h.hit_id in self.verified,
        }

    # ================================================================ effects
    def _event(self, fx: list[Effect], action: str, **data: Any) -> None:
        fx.append(Event(EventKind.JACKPOT, {"action": action, **data}))

    def _meter_record(self, fx: list[Effect], rec: mt.MeterRecord, **extra: Any) -> None:
        """The journal's account of a meter change, with the meter after it (reconciliation reads these)."""
        assert self.meter is not None
        data = {**rec.to_dict(), **extra, "meter_units": self.meter.meter_units}
        fx.append(JournalRecord(RECORD_KIND, data))

    def _alert(self, fx: list[Effect], kind: str, severity: str, reason: str, **details: Any) -> None:
        fx.append(Alert(kind, severity, reason, details))
        # Not kind "alert": that kind belongs to the AlertManager's book, which journals the alert itself.
        record = {"kind": kind, "severity": severity, "reason": reason, **details}
        fx.append(JournalRecord("jackpot_alert", record))

    def _refuse(self, fx: list[Effect], seat: int, reason: str, message: str, round_id: str | None) -> None:
        data: dict[str, Any] = {"seat": seat, "reason": reason, "message": message}
        if round_id:
            data["round_id"] = round_id
        fx.append(JournalRecord("jackpot_chip_refused", dict(data)))
        self._event(fx, "chip_refused", **data)

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
        if enabled and cfg is not None and meter is None:
            meter = mt.MeterState.initial(cfg)  # PT-2001 r.44: starts at the seed
            fx.append(JournalRecord(RECORD_KIND, {"kind": "seed", "meter_units": meter.meter_units}))
            self._event(fx, "reset", meter=meter.display_value, seed=cfg.seed, reason="initial seed")
        elif enabled and cfg is not None and meter is not None and self._differs(meter, cfg):
            try:
                meter, rec = mt.reconfigure(meter, cfg, between_rounds=True)
            except JackpotError as exc:
                raise Rejected(f"jackpot parameters: {exc}") from None
            fx.append(JournalRecord(RECORD_KIND, {**rec.to_dict(), "meter_units": meter.meter_units}))
            self._event(fx, "reconfigured", changes=rec.data["changes"])
        # Nothing changed above this line: a refusal leaves the seam as it was.
        self.config, self.meter, self.enabled, self.disabled_reason = cfg, meter, enabled, why
        fx.append(JournalRecord("jackpot_config", {"enabled": self.enabled, "reason": self.reason}))
        return fx

    @staticmethod
    def _differs(m: mt.MeterState, cfg: JackpotConfig) -> bool:
        mine = (m.bet_value, m.increment_bp, m.reserve_bp, m.seed, m.currency)
        return mine != (cfg.bet_value, cfg.increment_bp, cfg.reserve_bp, cfg.seed, cfg.currency)

    def check_close(self) -> None:
        """A winning hand stays on the table until paid (PT-2001 r.49): no closing with a hit pending."""
        if self.meter is not None and self.meter.pending:
            raise Rejected("a jackpot hit is pending: verify and pay it before closing (PT-2001 r.49)")

    # ================================================================ chips
    def manual_chip(self, seat: int) -> None:
        """Dealer entry (manual mode, PT-2001 r.41b); the core checks r.45 and r.47. Raises ``Rejected``."""
        if not self.enabled or self.config is None:
            raise Rejected(f"no jackpot chip: {self.reason}")
        if self.config.mode is Mode.AUTOMATIC:
            raise Rejected(
                "automatic jackpot: the chip slot senses the chip, no manual entry (PT-2001 r.41a)"
            )
        if not self.playable:
            raise Rejected(f"jackpot chip refused, return it: {self.reason}")

    def on_chip_sensor(
        self, seat: int, present: bool, *, betting: bool, round_id: str | None, seats: int, now: float
    ) -> list[Effect]:
        """A debounced chip-slot change (PT-2001 r.41a). During betting the level is what counts; a chip
        appearing while a round is dealt is refused and flagged (r.48)."""
        fx: list[Effect] = []
        fx.append(JournalRecord("chip_slot", {"seat": seat, "present": present, "betting": betting}))
        if not self.enabled or self.config is None:
            if present:
                self._refuse(fx, seat, UNPLAYABLE, f"no jackpot at this table: {self.reason}", round_id)
            return fx
        if self.config.mode is not Mode.AUTOMATIC:
            return fx  # a manual table (r.41b): the dealer enters the chips; the slots are not used
        if not 1 <= seat <= seats:
            if present:
                self._refuse(fx, seat, str(Refusal.UNKNOWN_SEAT), f"no seat {seat} at this table", round_id)
            return fx
        self.levels[str(seat)] = present
        if not present:
            if seat in self.flagged:
                self.flagged.remove(seat)  # the refused chip was taken back
            return fx
        if round_id is not None and not betting:
            # PT-2001 r.48: bets before dealing; the chip is refused, returned and flagged.
            msg = "jackpot chip placed after no more bets: refused and returned (PT-2001 r.48)"
            self._refuse(fx, seat, str(Refusal.LATE), msg, round_id)
            self._alert(fx, "dealer_error", "warning", msg, seat=seat, round_id=round_id, rule="PT-2001 r.48")
            return fx
        if betting and not self.playable and seat not in self.flagged:
            self.flagged.append(seat)
            self._refuse(fx, seat, UNPLAYABLE, f"jackpot chip refused, return it: {self.reason}", None)
        return fx

    def collect(
        self, round_id: str, main_bets: list[int], manual: list[int], *, seats: int, now: float
    ) -> tuple[list[int], list[Effect]]:
        """At "no more bets": the seats whose jackpot chip is accepted (PT-2001 r.41, r.45, r.47, r.48)."""
        fx: list[Effect] = []
        already, self.flagged = set(self.flagged), []  # refused as unplayable while betting: told already
        if not self.enabled or self.config is None:
            return [], fx
        table_seats = frozenset(range(1, seats + 1))
        chips = RoundChips(self.config.mode, table_seats, frozenset(main_bets) & table_seats)
        time_ms = int(now * 1000)
        if self.config.mode is Mode.AUTOMATIC:
            for seat, here in sorted(self.levels.items(), key=lambda kv: int(kv[0])):
                if here:
                    chips.sensed(ChipEvent(int(seat), True, time_ms))
            collection = chips.no_more_bets(time_ms)
        else:
            collection = chips.manual_collect(manual, time_ms)
        for r in collection.refused:
            why = {
                Refusal.NO_MAIN_BET: "jackpot chip on a seat without a main bet: returned (PT-2001 r.45)",
                Refusal.DUPLICATE: "one jackpot chip per seat (PT-2001 r.47)",
            }.get(r.reason, f"jackpot chip refused: {r.reason}")
            self._refuse(fx, r.seat, str(r.reason), why, round_id)
        accepted = list(collection.seats)
        if accepted and not self.playable:
            for seat in accepted:
                if seat not in already:
                    msg = f"jackpot chip refused, return it: {self.reason}"
                    self._refuse(fx, seat, UNPLAYABLE, msg, round_id)
            accepted = []
        if self.config.mode is Mode.AUTOMATIC:
            for seat in accepted:
                self.levels[str(seat)] = False  # the dealer's collection takes the chip out of the slot
        return accepted, fx

    def on_no_more_bets(self, round_id: str, chips: list[int]) -> list[Effect]:
        """The collected chips increment the meter (PT-2001 r.41), in the round's own transaction."""
        fx: list[Effect] = []
        self.round = {"round_id": round_id, "seats": sorted(chips), "frozen": False} if chips else None
        if not chips or self.meter is None:
            return fx
        try:
            self.meter, rec = mt.contribute(self.meter, len(chips), round_id)
        except JackpotError as exc:  # collect() refuses while unplayable, so this is a bug: refuse the input
            raise Rejected(f"jackpot contribution refused: {exc}") from None
        self._meter_record(fx, rec, seats=sorted(chips))
        self._event(
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
        if rnd is None or rnd["frozen"] or self.meter is None or rnd["round_id"] != tracker.round_id:
            return []
        seats = tracker.engine.seats
        cards = {s: [str(c) for c in seats[s].dealt] for s in rnd["seats"]}
        if not all(decided(cards[s]) or _seat_finished(seats[s], phase) for s in cards):
            return []
        rnd["frozen"] = True
        winners = [(s, combo) for s, c in cards.items() if (combo := evaluate(c)) is not None]
        fx: list[Effect] = []
        shown = {str(s): c[:4] for s, c in cards.items()}
        fx.append(JournalRecord("jackpot_evaluated", {"round_id": rnd["round_id"], "cards": shown}))
        if not winners:
            return fx
        awards = allocate(self.meter, winners)
        self.meter, rec = mt.freeze(self.meter, awards, rnd["round_id"])
        self._meter_record(fx, rec)
        capped = {a.seat for a in awards if a.capped}
        for h in self.meter.pending:
            combo = Combination[h.combination]
            self._event(
                fx,
                "hit_pending",
                round_id=h.round_id,
                hit_id=h.hit_id,
                seat=h.seat,
                combination=h.combination,
                amount=h.amount,
                top=h.top,
                capped=h.seat in capped,
                cards=cards[h.seat][:4],
                meter=self.meter.display_value,
            )
            self._alert(
                fx,
                "jackpot_pending",
                "critical",
                f"jackpot ({words(COMBINATION_WORDS, combo)}) on seat {h.seat}: "
                f"{money(h.amount, self.meter.currency)} pending; the hand "
                "stays on the table until a supervisor verifies and pays it (PT-2001 r.49)",
                hit_id=h.hit_id,
                seat=h.seat,
                amount=h.amount,
                round_id=h.round_id,
                rule="PT-2001 r.49",
            )
        return fx

    # ================================================================ display link
    def on_display(self, connected: bool) -> list[Effect]:
        """The sign's link (an input, so it is journaled and replayed): lost → unplayable (PT-2001 r.41)."""
        fx: list[Effect] = []
        if connected == self.display_ok:
            return fx
        self.display_ok = connected
        fx.append(JournalRecord("jackpot_display", {"connected": connected}))
        if not connected and self.enabled:
            self._alert(
                fx,
                "display_fault",
                "warning",
                "jackpot display lost: jackpot chips refused until it is back (PT-2001 r.41)",
                rule="PT-2001 r.41",
            )
        return fx

    def on_restart(self) -> list[Effect]:
        """A new process: the sign must answer again before the jackpot is playable (no alert: not lost)."""
        if not self.display_ok:
            return []
        self.display_ok = False
        return [JournalRecord("jackpot_display", {"connected": False, "reason": "restart"})]


def _seat_finished(seat_state: Any, phase: str) -> bool:
    """No more cards can go to the seat: the players' turns are over, or each of its hands is settled."""
    if phase in ("dealer", "complete"):
        return True
    return phase == "players" and all(h.status != OPEN and not h.needs_card for h in seat_state.hands)
