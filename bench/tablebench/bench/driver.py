"""The bench dealer: plays sessions and rounds on the real service through MQTT and the shoe's control
channel.

Card orders are scripted through the emulator (`queue`), cards come out when the dealer draws (`draw`), every
dealer input goes through `cmd/dealer` and every supervisor action is signed. Decisions are taken from the
retained `state/round` (`allowed_actions`, `turn`), never from the controller's internals.

Synchronisation without timing: after each action the bench waits until its MQTT consumer has received every
event the controller committed so far (`barrier`: the journal's highest event id, read-only from SQLite; the
service always runs on the bench machine).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from controller.client import CommandFailed, TableView
from tablebench.bench.journal_probe import last_committed_event_id
from tablebench.bench.rig import Rig

TIMEOUT = 30.0
ROUND_STATES = ("dealing", "players", "dealer", "insurance")
DONE_STATES = (
    "settled",
    "cards_returned",
)  # generous bounds for a loaded CI machine; never a timing assertion


class BenchTimeout(AssertionError):
    pass


def _card_journaled(path: str, shoe_seq: int) -> bool:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        rows = conn.execute(
            "SELECT data FROM records WHERE kind = 'card' ORDER BY seq DESC LIMIT 50"
        ).fetchall()
        return any(json.loads(d).get("shoe_seq") == shoe_seq for (d,) in rows)
    finally:
        conn.close()


class Dealer:
    def __init__(self, rig: Rig, *, seed: int = 0) -> None:
        self.rig = rig
        self.rng = random.Random(seed)
        self.rounds: list[str] = []
        self.cut_seat = 1
        # The floor: a link fault that arises on its own (retries exhausted on a noisy line, a starved machine)
        # keeps the table in link_down until a supervisor clears it; while the bench waits for something
        # else, its supervisor does so once the link is back, as an inspector called to the table would.
        self.floor_clears_link = True
        self.link_faults_cleared = 0
        # fault kill_before_commit: the next card drawn is acked by the service and the service killed before
        # it commits it (docs/protocol.md §5a: the shoe sends it again after the restart)
        self.kill_on_next_card = False
        self.kills_before_commit = 0  # how many landed in the window (the card acked, not yet journaled)
        # a fault that happens as the next card is drawn (the journal's disk fails): it draws the card itself
        self.next_draw: Callable[[Dealer, int], Awaitable[int]] | None = None
        self.journal_disk_faults: Counter[str] = (
            Counter()
        )  # journal disk faults that met a card ("full", ...)

    # ---- views ----
    @property
    def view(self) -> TableView:
        return self.rig.monitor.view

    def table(self) -> dict[str, Any]:
        return self.view.states.get("table", {})

    def round(self) -> dict[str, Any]:
        return self.view.states.get("round", {})

    @property
    def state(self) -> str:
        return str(self.table().get("state", "unknown"))

    async def until(self, pred: Callable[[TableView], bool], what: str, timeout: float = TIMEOUT) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                await self.rig.monitor.wait_for(
                    lambda v: pred(v) or self._link_back_awaiting_clear(v), max(0.0, deadline - loop.time())
                )
            except TimeoutError:
                raise BenchTimeout(
                    f"timed out waiting for {what}: table state {self.state!r}, lid {self.view.states.get('lid')}"
                    f"\ncontroller log:\n{self.rig.stack.controller_log(15)}"
                ) from None
            if pred(self.view):
                return
            await self._clear_link_fault()

    def _link_back_awaiting_clear(self, v: TableView) -> bool:
        table, shoe = v.states.get("table", {}), v.states.get("shoe", {})
        return self.floor_clears_link and table.get("state") == "link_down" and shoe.get("linked") is True

    async def _clear_link_fault(self) -> None:
        """The supervisor clears a link fault that is back (product guide: an authorised person clears it)."""
        try:
            await self.rig.sv("clear_link")
        except CommandFailed:
            await asyncio.sleep(0.1)  # the link dropped again or someone cleared it first: look again
            return
        self.link_faults_cleared += 1
        try:
            await self.rig.monitor.wait_for(lambda v: not self._link_back_awaiting_clear(v), TIMEOUT)
        except TimeoutError:
            raise BenchTimeout("clear_link was accepted but the table stayed in link_down") from None

    async def barrier(self) -> None:
        """Wait until the consumer has seen every event committed so far (QoS 1, in event_id order)."""
        target = await asyncio.to_thread(last_committed_event_id, str(self.rig.journal_path))
        rec = self.rig.monitor.received
        try:
            await self.until(lambda v: rec.contiguous >= target, f"events up to {target} on MQTT")
        except BenchTimeout as exc:
            missing = [i for i in range(rec.contiguous + 1, target + 1) if i not in rec.seen]
            raise BenchTimeout(
                f"{exc}\nconsumer: contiguous {rec.contiguous}, newest {rec.max_event_id}, missing {missing[:20]}"
            ) from None

    async def _draw_and_kill_before_commit(self, n: int) -> int:
        """Hold the journal's write lock (a stuck disk), draw, wait until the shoe has the service's ack for
        the card, kill -9 the service, release the lock, start the service again. No hook in the service."""
        rig, ctl = self.rig, self.rig.ctl()
        path = str(rig.journal_path)
        lock = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
        try:
            await asyncio.to_thread(lock.execute, "BEGIN IMMEDIATE")
            seq = int((await ctl.state())["shoe_seq"]) + n
            drawn = await ctl.draw(n)
            for _ in range(300):
                st = await ctl.state()
                if st["shoe_seq"] >= seq and st["pending_events"] == 0:
                    break
                await asyncio.sleep(0.01)
            await asyncio.to_thread(rig.stack.kill_controller)
            landed = not await asyncio.to_thread(_card_journaled, path, seq)
        finally:
            await asyncio.to_thread(lock.execute, "ROLLBACK")
            lock.close()
        self.kills_before_commit += landed
        await rig.restart_killed_controller()
        return drawn

    async def write_off_lost(self, timeout: float = 15.0) -> list[int]:
        """After a broker crash: let the consumer receive what the service resends, then stop waiting for
        the event ids the crash destroyed (they stay missing in the reconciliation, as gaps)."""
        target = await asyncio.to_thread(last_committed_event_id, str(self.rig.journal_path))
        rec = self.rig.monitor.received
        try:
            await self.until(lambda v: rec.contiguous >= target, f"events up to {target}", timeout)
            return []
        except BenchTimeout:
            lost = [i for i in range(rec.contiguous + 1, target + 1) if i not in rec.seen]
            rec.seen.update(lost)  # only for the barrier: first_seen_ids() (the reconciliation) lacks them
            while rec.contiguous + 1 in rec.seen:
                rec.contiguous += 1
            rec.written_off.extend(lost)
            return lost

    async def wait_state(self, *states: str, timeout: float = TIMEOUT) -> None:
        await self.until(
            lambda v: v.states.get("table", {}).get("state") in states, f"state {states}", timeout
        )

    async def wait_lid(self, *states: str) -> None:
        await self.until(lambda v: v.states.get("lid", {}).get("state") in states, f"lid {states}")

    # ---- inputs ----
    async def cmd(self, action: str, **args: Any) -> dict[str, Any]:
        res = await self.rig.dealer.dealer(action, **args)
        await self.barrier()
        return res

    async def draw(self, n: int = 1) -> int:
        """The dealer draws ``n`` cards; returns once the controller has reported each of them."""
        ctl = self.rig.ctl()
        if self.kill_on_next_card:
            self.kill_on_next_card = False
            drawn = await self._draw_and_kill_before_commit(n)
        elif self.next_draw is not None:
            draw, self.next_draw = self.next_draw, None
            drawn = await draw(self, n)
        else:
            drawn = await ctl.draw(n)
        seq = int((await ctl.state())["shoe_seq"])
        await self.until(lambda v: v.states.get("table", {}).get("last_shoe_seq", -1) >= seq, f"card {seq}")
        await self.barrier()
        return drawn

    # ---- sessions ----
    async def open_session(self, profile: str | None = None) -> None:
        """Open the table (the chief inspector), load the shoe (PT-2001 r.53-54) or wait for the cut."""
        profile = profile or self.rig.stack.opts.profile
        shuffler = self.rig.shuffler
        ctl = self.rig.ctl()
        if shuffler == "continuous":
            st = await ctl.state()
            if st["cards_inside"]:  # a full machine: the cards come out first, then are loaded properly
                await self.draw(int(st["cards_inside"]))
            await self.rig.sv("open_table", profile=profile, shuffler="continuous")
            await self.wait_lid("open")
            total = int((await ctl.state())["cards_out"])
            await ctl.insert(count=total // 2)  # two packets, r.54
            await ctl.insert(count=total - total // 2)
            await ctl.close_lid()
            await self.wait_state("betting")
        else:
            await self.rig.sv("open_table", profile=profile, shuffler="batch")
            await self.wait_state("cut")
            await self.cut(profile)
        await self.barrier()

    async def cut(self, profile: str | None = None) -> None:
        """PT-2001 r.8: the seat with the right cuts; MO-2004 art.2.1.1: the dealer may."""
        if (profile or self.rig.stack.opts.profile).startswith("mo-"):
            await self.cmd("cut", dealer=True)
        else:
            try:
                await self.cmd("cut", seat=self.cut_seat)
            except CommandFailed as exc:
                m = re.search(r"seat (\d+) has the right to cut", exc.reason)
                if not m:
                    raise
                self.cut_seat = int(m.group(1))
                await self.cmd("cut", seat=self.cut_seat)
        await self.wait_state("betting")

    async def close_session(self) -> None:
        await self.rig.sv("close_table")
        await self.wait_state("closed")
        await self.barrier()

    # ---- rounds ----
    def choose(self, rnd: dict[str, Any]) -> str:
        """A plausible dealer input among the allowed ones (seeded: splits, doubles, hits, stands)."""
        allowed = list(rnd.get("allowed_actions") or [])
        if "decline_insurance" in allowed:
            return "decline_insurance"
        total = 0
        turn = rnd.get("turn") or {}
        for seat in rnd.get("seats", []):
            if seat.get("seat") == turn.get("seat"):
                for hand in seat.get("hands", []):
                    if hand.get("hand") == turn.get("hand"):
                        total = int(hand.get("total", 0))
        if "split" in allowed and self.rng.random() < 0.5:
            return "split"
        if "double" in allowed and total in (9, 10, 11) and self.rng.random() < 0.7:
            return "double"
        if "hit" in allowed and (total < 12 or (total < 17 and self.rng.random() < 0.7)):
            return "hit"
        if "stand" in allowed:
            return "stand"
        return allowed[0]

    def needs_card(self) -> bool:
        rnd = self.round()
        return not rnd.get("complete") and not rnd.get("allowed_actions") and rnd.get("phase") != "void"

    async def replace_unreadable(self) -> None:
        """PT-2001 r.51: the inspector reads the unreadable card and enters it (the emulator knows it)."""
        last = (await self.rig.ctl().dealt(max(0, int((await self.rig.ctl().state())["cards_drawn"]) - 1)))[
            -1
        ]
        await self.rig.sv("replace_card", card=str(last["code"]))
        await self.barrier()

    async def press(self, button: str) -> None:
        """A dealer button on the table (the fake GPIO board), then wait for what it caused."""
        await self.rig.gpio("press", name=f"button_{button}")
        await self.barrier()

    async def play_round(
        self,
        bets: dict[int, int],
        order: list[str] | None = None,
        *,
        hook: Callable[[int], Awaitable[None]] | None = None,
        chips: tuple[int, ...] = (),
        max_steps: int = 200,
    ) -> str:
        """Bets, no more bets, then draw whenever a card is due and decide when a decision is due.
        ``hook(step)`` runs before each step (the soak injects faults there)."""
        if order:
            await self.rig.ctl().queue(order)
        for seat, amount in bets.items():
            await self.cmd("place_bet", seat=seat, amount=amount)
        for seat in chips:  # PT-2001 r.41a, r.45: the chip slot senses the jackpot chip beside a main bet
            await self.rig.gpio("set", name=f"chip_slot_{seat}", value=True)
        rid = str((await self.cmd("no_more_bets"))["result"]["round_id"])
        for seat in chips:  # r.48: the chips are collected at "no more bets"
            await self.rig.gpio("set", name=f"chip_slot_{seat}", value=False)
        return await self.play_out(rid, hook=hook, max_steps=max_steps)

    async def play_out(
        self, rid: str, *, hook: Callable[[int], Awaitable[None]] | None = None, max_steps: int = 200
    ) -> str:
        """The rest of round ``rid``, under way: draw whenever a card is due, decide when a decision is due,
        wait out a fault; until it is settled."""
        for step in range(max_steps):
            if hook is not None:
                await hook(step)
            if self.table().get("awaiting_card_replacement"):
                await self.replace_unreadable()
                continue
            if self.state in DONE_STATES:
                break
            if self.state not in ROUND_STATES:  # a fault (link down, resync, jam, tamper): wait it out
                await self.wait_state(*ROUND_STATES, *DONE_STATES, timeout=120)
                continue
            if self.needs_card():
                await self.draw(1)
            else:
                await self.cmd(self.choose(self.round()))
        else:
            raise BenchTimeout(f"round {rid} did not finish in {max_steps} steps: {self.round()}")
        self.rounds.append(rid)
        return rid

    async def pay_jackpot_hits(self) -> list[int]:
        """PT-2001 r.49-50: a supervisor verifies and pays each pending hit, smaller prizes first (r.50a)."""
        await self.barrier()
        hits = list(self.view.states.get("jackpot", {}).get("pending_hits") or [])
        hits.sort(key=lambda h: (bool(h.get("top")), int(h.get("amount", 0)), int(h.get("seat", 0))))
        for h in hits:  # all verified first: tied top winners share only once all are verified (r.50b)
            await self.rig.sv("jackpot_verify", hit_id=h["hit_id"])
        for h in hits:
            await self.rig.sv("jackpot_pay", hit_id=h["hit_id"])
        await self.barrier()
        return [int(h["hit_id"]) for h in hits]

    async def finish_round(self) -> None:
        """After the settlement: the continuous lid cycle (PT-2001 r.59-60) or the batch next round."""
        await self.wait_state(*DONE_STATES, timeout=120)  # e.g. a restart resynchronising with the shoe
        await self.pay_jackpot_hits()
        if self.rig.shuffler == "continuous":
            await self.lid_cycle()
            await self.wait_state(*DONE_STATES, timeout=120)
            await self.cmd("next_round")
            await self.wait_state("betting")
        else:
            await self.cmd("next_round")
            await self.wait_state("betting", "cut", "reshuffle")
            if self.state != "betting":
                await self.wait_state("cut")
                await self.cut()

    async def lid_cycle(self) -> bool:
        """The lid opens by itself after the settlement; the cards go in; the dealer closes it. If the lid
        cannot open (the machine still shuffling), the cards stay in the discard and go in with the next
        round's (PT-2001 r.61): returns False."""
        ctl = self.rig.ctl()
        rid = self.rounds[-1] if self.rounds else ""
        carried = self.rig.monitor.received.carried
        await self.until(
            lambda v: v.states.get("lid", {}).get("state") == "open" or rid in carried,
            "lid open or r.61 carry",
        )
        if self.view.states.get("lid", {}).get("state") != "open":
            await self.barrier()
            if not (await ctl.state()).get("lid_open"):
                return False  # carried (r.61): the cards go in with the next round's
            # Carried by a restart, but the shoe had opened the lid before it: its report comes again after the
            # restart (docs/protocol.md §5a) and the dealer still inserts the cards and closes the lid (r.59-60).
            await self.until(
                lambda v: v.states.get("lid", {}).get("state") == "open", "the lid the shoe opened"
            )
        await ctl.insert()
        await self.wait_state("cards_returned")
        await ctl.close_lid()
        await self.wait_lid("locked")
        await self.barrier()
        return True
