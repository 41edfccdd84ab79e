"""The service's watch of a linked progressive's meter documents (controller/service/jackpot_link.py), with the
pure core's link in a stand-in table and a fake clock: which documents become core inputs (only transitions and
this table's prizes), the timeout, a stale retained document, a flood of forgeries counted not journaled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from support.link_docs import LINK, LinkSigner, meter_doc

from controller.jackpot.config import JackpotConfig
from controller.jackpot.linked import LinkedJackpot
from controller.service.jackpot_link import LinkWatch
from controller.table import inputs

SIGNER = LinkSigner()
CFG = JackpotConfig.from_dict(
    {"enabled": True, "mode": "manual", "bet_value": 100, "currency": "EUR", "link": LINK,
     "link_public_key": SIGNER.public_hex, "link_timeout_s": 10}
)  # fmt: skip


class StandInTable:
    """What LinkWatch uses of the table: ``submit`` and ``core.jackpot.linked`` (the pure LinkedJackpot)."""

    def __init__(self) -> None:
        self.linked = LinkedJackpot(LINK)
        self.core = SimpleNamespace(jackpot=SimpleNamespace(linked=self.linked))
        self.submitted: list[Any] = []

    async def submit(self, inp: Any) -> dict[str, Any]:
        self.submitted.append(inp)
        if isinstance(inp, inputs.JackpotLink):
            self.linked.on_status(inp.up, inp.reason, inp.seq)
        return {}


def watch(table: StandInTable, clock: list[float]) -> LinkWatch:
    return LinkWatch(CFG, "T1", table, SimpleNamespace(), lambda: None, clock=lambda: clock[0])  # type: ignore[arg-type]


async def test_only_transitions_and_own_prizes_become_inputs() -> None:
    table, now = StandInTable(), [100.0]
    w = watch(table, now)
    for seq in range(1, 6):  # five heartbeats: one transition
        assert await w.handle(SIGNER.sign(meter_doc(seq))) is not None
    assert table.submitted == [inputs.JackpotLink(True, "", 1)]
    hit = SIGNER.hit(4, "T1", "r-1", 2)
    other = SIGNER.hit(5, "T2", "r-9", 1)
    await w.handle(SIGNER.sign(meter_doc(6, pending=[hit, other])))
    await w.handle(SIGNER.sign(meter_doc(7, pending=[hit, other])))  # listed again: not submitted again
    awards = [i for i in table.submitted if isinstance(i, inputs.LinkHitAwarded)]
    assert awards == [inputs.LinkHitAwarded(LINK, 4, "r-1", 2, "TWO_ACES_MIXED", 2500, 1)]
    await w.handle(SIGNER.sign(meter_doc(8, status="suspended")))
    assert table.submitted[-1] == inputs.JackpotLink(False, "suspended by the link's controller", 8)


async def test_forgeries_and_stale_documents_are_counted_not_submitted() -> None:
    table, now = StandInTable(), [100.0]
    w = watch(table, now)
    forger = LinkSigner()
    for seq in range(1, 251):
        assert await w.handle(forger.sign(meter_doc(seq))) is None
    old = (datetime.now(UTC) - timedelta(seconds=60)).isoformat().replace("+00:00", "Z")
    assert (
        await w.handle(SIGNER.sign(meter_doc(1, ts=old))) is None
    )  # a retained one left by a dead controller
    assert table.submitted == [] and w.latest is None
    assert w.refused == {"bad_signature": 250, "stale": 1}


async def test_the_timeout_takes_the_link_down_once_and_a_fresh_document_brings_it_back() -> None:
    table, now = StandInTable(), [100.0]
    w = watch(table, now)
    await w.handle(SIGNER.sign(meter_doc(1)))
    now[0] += 9.9
    await w.check()
    assert w.up and len(table.submitted) == 1
    now[0] += 0.2  # 10.1 s without a valid document (link_timeout_s = 10)
    await w.check()
    await w.check()
    assert table.submitted[1:] == [inputs.JackpotLink(False, "no valid meter document for 10 s", 1)]
    assert table.linked.blocking == "progressive unavailable: no valid meter document for 10 s"
    await w.handle(SIGNER.sign(meter_doc(2)))
    assert w.up and table.submitted[-1] == inputs.JackpotLink(True, "", 2)


async def test_a_table_opened_after_the_last_document_comes_up_while_it_is_fresh() -> None:
    table, now = StandInTable(), [100.0]
    table.core.jackpot.linked = None  # not opened on the link yet
    w = watch(table, now)
    await w.handle(SIGNER.sign(meter_doc(1)))
    assert table.submitted == []
    table.core.jackpot.linked = table.linked  # open_table
    now[0] += 3
    await w.check()
    assert table.submitted == [inputs.JackpotLink(True, "", 1)]
