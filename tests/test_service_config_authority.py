"""The table's configuration is the authority (issue 16): the real service (`tablectl run`, real mosquitto,
emulated shoe) opens with ``table.profile`` and ``shoe.mode``, refuses an open_table that names others (answered
and journaled with who and why), and enforces ``table.min_bet``/``max_bet`` in the core's bet checks and the
published limits."""

from __future__ import annotations

import sqlite3

import pytest

from controller.client import CommandFailed
from tablebench.demo_session import prepare_session
from tablebench.stack import DEMO_PINS, Stack, StackOptions

WAIT = 30
pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def stack(tmp_path):
    # PT-2001 r.14/r.37: 1000..20000 sits inside the profile's rules (a multiple of the minimum, <= 30 x)
    st = Stack(tmp_path / "stack", StackOptions(jackpot=False, min_bet=1000, max_bet=20000)).start()
    yield st
    st.stop()


def _refusals(stack: Stack) -> list[str]:
    db = sqlite3.connect(stack.workdir / "state" / "journal.db")
    try:
        rows = db.execute("SELECT data FROM records WHERE kind = 'command_refused'").fetchall()
    finally:
        db.close()
    return [str(r[0]) for r in rows]


async def test_open_table_takes_the_configured_profile_and_shoe_and_refuses_others(stack: Stack) -> None:
    sup = stack.client("supervisor1")
    await sup.connect()
    try:
        await sup.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
        with pytest.raises(CommandFailed, match=r"this table is configured for pt-2001 \(table.profile\)"):
            await sup.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="mo-2004")
        with pytest.raises(CommandFailed, match=r"configured as continuous \(shoe.mode\)"):
            await sup.supervisor("alice", DEMO_PINS["alice"], "open_table", shuffler="batch")
        assert sup.view.states["table"]["state"] == "closed"
        refused = _refusals(stack)
        assert any("alice" in r and "configured for pt-2001" in r for r in refused), refused
        assert any("alice" in r and "shoe.mode" in r for r in refused), refused
        # No profile, no shuffler named: the configuration's (the table opens for loading, PT-2001 r.53)
        await sup.supervisor("alice", DEMO_PINS["alice"], "open_table")
        await sup.wait_for(lambda v: v.states["table"].get("state") == "loading", WAIT)
        table = sup.view.states["table"]
        assert (table["profile"], table["shuffler"]) == ("pt-2001", "continuous")
    finally:
        await sup.close()


async def test_a_bet_below_the_tables_minimum_is_refused_citing_the_limit(stack: Stack) -> None:
    """PT-2001 r.14: the table minimum. The profile allows 500; this table's configuration says 1000."""
    await prepare_session(stack, "pt-2001", lambda line: None)
    dealer = stack.client("dealer")
    await dealer.connect()
    try:
        await dealer.wait_for(lambda v: v.states.get("table", {}).get("state") == "betting", WAIT)
        assert dealer.view.states["table"]["limits"] == {"min_bet": 1000, "max_bet": 20000}
        with pytest.raises(CommandFailed, match=r"outside the table limits 1000\.\.20000 \(PT-2001 r\.14\)"):
            await dealer.dealer("place_bet", seat=1, amount=500)
        with pytest.raises(CommandFailed, match=r"outside the table limits 1000\.\.20000"):
            await dealer.dealer("place_bet", seat=1, amount=21000)
        await dealer.dealer("place_bet", seat=1, amount=1000)
        await dealer.wait_for(
            lambda v: (v.states["table"].get("bets", {}).get("1") or {}).get("amount") == 1000, WAIT
        )
    finally:
        await dealer.close()


@pytest.fixture
def chf_stack(tmp_path):
    options = StackOptions(jackpot=False, config_overrides={"table": {"currency": "CHF"}})
    st = Stack(tmp_path / "stack", options).start()
    yield st
    st.stop()


async def test_the_configured_currency_is_published_when_the_session_opens(chf_stack: Stack) -> None:
    """Issue 36: `table.currency` (a table without a jackpot) is pinned at open_table and published in
    `events/session` `opened`, as the table's journal holds it: the floor writes every amount in it."""
    import json

    await prepare_session(chf_stack, "pt-2001", lambda line: None)
    db = sqlite3.connect(chf_stack.workdir / "state" / "journal.db")
    try:
        rows = db.execute("SELECT payload FROM events WHERE topic = 'events/session'").fetchall()
        pinned = db.execute("SELECT data FROM records WHERE kind = 'configuration_pinned'").fetchall()
    finally:
        db.close()
    opened = [json.loads(r[0])["data"] for r in rows]
    assert [(d["action"], d.get("currency")) for d in opened] == [("opened", "CHF")]
    assert pinned and json.loads(pinned[0][0])["currency"] == "CHF"
