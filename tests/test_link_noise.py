"""A noisy or one-sided shoe line never stalls silently (issue 14 item 4; docs/protocol.md §6).

Through a real pty with the emulated shoe and the real ShoeDriver. The finding: the shoe marked the host absent
after a silence and waited for a HELLO, while the host still heard the shoe's heartbeats and never said HELLO
again: cards drawn never arrived and the link looked up. Now the shoe's heartbeat says whether it hears the
host; the host says HELLO again at once and, if the shoe stays deaf, declares the link down (a link fault)."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.pty_shoe import shoe_on_pty

from drivers import events as ev

pytestmark = pytest.mark.timeout(180)


async def _cards(driver, n: int, timeout: float) -> tuple[list[int], list[ev.DeviceEvent]]:
    """The next ``n`` cards' shoe_seq (and every other event seen meanwhile)."""
    seqs: list[int] = []
    others: list[ev.DeviceEvent] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while len(seqs) < n:
        try:
            e = await driver.next_event(max(0.01, end - loop.time()))
        except TimeoutError:
            pytest.fail(f"only {len(seqs)} of {n} cards arrived: {seqs}; other events {others}")
        if isinstance(e, ev.CardOut | ev.CardUnreadable):
            seqs.append(e.shoe_seq)
        else:
            others.append(e)
    return seqs, others


async def _until(pred, what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():
        if loop.time() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_shoe_that_stops_hearing_the_host_is_greeted_again_and_delivers(tmp_path) -> None:
    """The host→shoe direction goes dead for a moment: the shoe marks the host absent and holds its cards.
    The host, hearing 'I do not hear you' in the shoe's heartbeats, says HELLO again as soon as the line
    lets it: the cards arrive, with no link fault (the outage was shorter than the host's silence timeout)."""
    async with shoe_on_pty({"seed": 3}, tmp_path, silence_timeout=8.0) as (driver, ctl):
        shoe = ctl.shoe  # type: ignore[attr-defined]
        await ctl.set_error_rate(drop_rate=1.0, direction="to_device")
        await _until(lambda: not shoe._host_present, "the shoe to give up on the host")
        assert await ctl.draw(2) == 2
        await ctl.set_error_rate(drop_rate=0.0)
        seqs, others = await _cards(driver, 2, 6.0)
        assert seqs == [1, 2]
        assert not any(isinstance(e, ev.LinkDown) for e in others) and driver.connected
        assert driver.stats.unheard >= 1


async def test_a_shoe_that_stays_deaf_raises_a_link_fault_and_loses_nothing(tmp_path) -> None:
    """The host→shoe direction stays dead: the host hears heartbeats but the shoe never hears it again.
    Within its silence timeout the host declares the link down (the table raises its link fault); once the
    line is back the link comes up by itself and the cards drawn meanwhile arrive, once each."""
    async with shoe_on_pty({"seed": 3}, tmp_path) as (driver, ctl):
        shoe = ctl.shoe  # type: ignore[attr-defined]
        await ctl.set_error_rate(drop_rate=1.0, direction="to_device")
        await _until(lambda: not shoe._host_present, "the shoe to give up on the host")
        assert await ctl.draw(3) == 3
        down = await driver.next_event(15)
        assert isinstance(down, ev.LinkDown) and "one-sided" in down.reason, down
        assert not driver.connected
        await ctl.set_error_rate(drop_rate=0.0)
        seqs, others = await _cards(driver, 3, 20.0)
        assert seqs == [1, 2, 3]
        assert [type(e) for e in others] == [ev.Identified, ev.LinkUp]


async def _noisy_run(tmp_path, ber: float, seconds: float, every: float, **timing) -> dict[str, float]:
    """Draw a card every ``every`` s for ``seconds`` at ``ber`` both ways, then a clean line: every card must
    arrive exactly once and in order, and the host must never believe the link up while the shoe does not
    hear it for longer than its silence timeout (plus two heartbeats)."""
    link = {
        k: timing[v]
        for k, v in (("heartbeat_s", "hb"), ("silence_timeout_s", "st"), ("ack_timeout_s", "ack"))
    }
    kw = {
        "ack_timeout": timing["ack"],
        "silence_timeout": timing["st"],
        "heartbeat_interval": timing["hb"],
        "max_retries": 5,
    }
    async with shoe_on_pty({"seed": 11, "link": link}, tmp_path, **kw) as (driver, ctl):
        shoe = ctl.shoe  # type: ignore[attr-defined]
        got: list[int] = []
        downs = 0
        one_sided_since: float | None = None
        worst = 0.0

        async def consume() -> None:
            nonlocal downs
            while True:
                e = await driver.next_event()
                if isinstance(e, ev.CardOut | ev.CardUnreadable):
                    got.append(e.shoe_seq)
                downs += isinstance(e, ev.LinkDown)

        async def watch() -> None:
            nonlocal one_sided_since, worst
            while True:
                now = time.monotonic()
                if driver.connected and not shoe._host_present:
                    one_sided_since = one_sided_since or now
                    worst = max(worst, now - one_sided_since)
                else:
                    one_sided_since = None
                await asyncio.sleep(0.02)

        tasks = [asyncio.create_task(consume()), asyncio.create_task(watch())]
        try:
            await ctl.set_error_rate(bit_error_rate=ber)
            drawn, start = 0, time.monotonic()
            while time.monotonic() - start < seconds:
                drawn += await ctl.draw(1)
                await asyncio.sleep(every)  # the dealer's pace: load, not a wait for a result
            in_noise = len(got)
            await ctl.set_error_rate(bit_error_rate=0.0)
            await _until(lambda: len(got) >= drawn, f"{drawn} cards (got {len(got)})", timeout=60)
        finally:
            for t in tasks:
                t.cancel()
        assert got == list(range(1, drawn + 1)), "a card lost, repeated or out of order"
        assert worst <= timing["st"] + 2 * timing["hb"] + 0.5, f"one-sided link unnoticed for {worst:.1f} s"
        stats = driver.stats
        return {
            "drawn": drawn,
            "arrived_during_noise": in_noise,
            "link_downs": downs,
            "one_sided_max_s": round(worst, 2),
            "crc_errors": stats.crc_errors,
            "unheard": stats.unheard,
        }


FAST = {"hb": 0.1, "st": 1.5, "ack": 0.1}


@pytest.mark.parametrize("ber", [3e-3, 1e-2])
async def test_bit_errors_both_ways_lose_nothing_short(tmp_path, ber: float) -> None:
    result = await _noisy_run(tmp_path, ber, 12.0, 0.4, **FAST)
    assert result["drawn"] >= 10, result


SERVICE_TIMING = {"hb": 0.5, "st": 3.0, "ack": 0.2}  # the service's defaults (firmware_configs/table.toml)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("ber", [3e-3, 1e-2])
async def test_bit_errors_both_ways_for_minutes_lose_nothing(tmp_path, ber: float) -> None:
    """The long version (docs/reliability.md records its result): 3 minutes at the service's timings."""
    result = await _noisy_run(tmp_path, ber, 180.0, 2.0, **SERVICE_TIMING)
    print(f"BER {ber}: {result}")


# Why 1e-2 cannot hold a link (docs/reliability.md §1a): a frame of L bytes survives a bit-error rate p with
# probability (1-p)^(8L). At 1e-2 a card event (22 bytes framed) survives 17 % of the time, its ACK (8 bytes)
# 53 %: one attempt in 11 gets through both ways, so the 6 sends (5 retries) of the service's link run out
# 57 % of the time; an IDENTIFY (40 bytes) gets through once in 25 HELLOs. At 3e-3: 59 % and 83 %, 2 % run
# out. Retransmission tuning does not change these odds much; only forward error correction would (a
# protocol change, not made). What 1e-2 must do instead: raise the link fault, lose nothing, recover once
# the line is better.
MINUTE_AT_1E2 = 60.0  # a minute, not several: the default suite stays short (the 3-minute run is -m slow)


async def test_a_minute_at_1e2_raises_the_link_fault_loses_no_card_and_recovers(tmp_path) -> None:
    """SUSTAINED (60 s, default suite): 1e-2 both ways for a minute at the service's timings, a card drawn
    every 2 s. The link fault (LinkDown) is raised while it lasts; no card is lost, repeated, reordered or
    changed; once the line is clean the link comes up by itself and every card drawn arrives."""
    timing = SERVICE_TIMING
    link = {"heartbeat_s": timing["hb"], "silence_timeout_s": timing["st"], "ack_timeout_s": timing["ack"]}
    kw = {"ack_timeout": timing["ack"], "silence_timeout": timing["st"], "heartbeat_interval": timing["hb"]}
    kw["max_retries"] = 5
    async with shoe_on_pty({"seed": 13, "link": link}, tmp_path, **kw) as (driver, ctl):
        cards: list[tuple[int, str]] = []
        kinds: list[type] = []
        downs_in_noise = 0

        async def consume() -> None:
            while True:
                e = await driver.next_event()
                kinds.append(type(e))
                if isinstance(e, ev.CardOut):
                    cards.append((e.shoe_seq, e.code))

        task = asyncio.create_task(consume())
        try:
            await ctl.set_error_rate(bit_error_rate=1e-2)
            drawn, start = 0, time.monotonic()
            while time.monotonic() - start < MINUTE_AT_1E2:
                drawn += await ctl.draw(1)
                await asyncio.sleep(2.0)  # the dealer's pace: load, not a wait for a result
            downs_in_noise = kinds.count(ev.LinkDown)
            await ctl.set_error_rate(bit_error_rate=0.0)
            await _until(lambda: len(cards) >= drawn and driver.connected, f"{drawn} cards", timeout=60)
        finally:
            task.cancel()
        dealt = [(int(d["shoe_seq"]), str(d["code"])) for d in await ctl.dealt()]
        assert drawn >= 25
        assert downs_in_noise >= 1, f"no link fault in a minute at 1e-2: {kinds.count(ev.CardOut)} cards"
        assert cards == dealt, "a card lost, repeated, out of order or changed"
        last_down = len(kinds) - 1 - kinds[::-1].index(ev.LinkDown)
        assert ev.LinkUp in kinds[last_down:], "the link did not come up again by itself"
        print(
            f"1e-2 for {MINUTE_AT_1E2:.0f} s: {drawn} cards, {downs_in_noise} link faults, stats {driver.stats}"
        )
