"""The real service (`tablectl run`, real mosquitto, emulated shoe) on a pruned journal (issue 16): it starts
without an integrity fault (start-up check, the whole-chain check, the broker's retained checkpoint from before the
prune), keeps appending and signing, and the journal verifies against the key in the integrity manifest."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.broker import Recorder
from test_journal_checkpoint import tablectl

from controller.audit.keys import load_key, public_key_from_manifest
from controller.journal.archive import archive
from controller.journal.store import Journal
from controller.ops.prune import prune
from controller.ops.status import read
from controller.shell import TableController
from controller.topics import Topics
from tablebench.stack import Stack, StackOptions

DAY = 86400.0


async def wait_until(pred, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(0.05)


async def test_the_service_starts_on_a_pruned_journal_and_keeps_a_valid_chain(tmp_path: Path) -> None:
    opts = StackOptions(jackpot=False, verbose=True, config_overrides={"audit": {"checkpoint_interval_s": 1}})
    stack = Stack(tmp_path, opts).start()
    try:
        assert stack.broker is not None
        topics = Topics(opts.site, opts.table_id)
        state = tmp_path / "state"
        db, manifest = state / "journal.db", tmp_path / "integrity.json"
        key = public_key_from_manifest(manifest)
        assert key is not None
        rec = Recorder(stack.broker, "monitor", topics, filters=("audit/#",)).start()
        await rec.await_for(lambda m: any(t == "audit/checkpoint" for t, _, _ in m), timeout=30)
        await wait_until(lambda: read(state).outbox_depth == 0)  # the broker acknowledged everything
        rec.stop()
        assert stack.stop_controller() == 0

        # what the controller does every 100 inputs: a snapshot of its state (recovered from the journal)
        journal = Journal(db, audit_public_key=key)
        tc = TableController(journal, None)
        tc.recover()
        journal.save_snapshot(tc.core.snapshot())
        journal.close()

        done = archive(db, tmp_path / "archive.db", key)
        pruned = prune(
            db,
            done.path,
            key,
            load_key(state / "audit_key.pem"),
            by="ana",
            clock=lambda: time.time() + 31 * DAY,
        )
        assert pruned.anchor_seq > 1 and pruned.records_deleted == pruned.anchor_seq - 1
        assert tablectl("journal", "verify", "--db", str(db), "--manifest", str(manifest)).returncode == 0

        rec = Recorder(stack.broker, "monitor", topics, filters=("audit/checkpoint", "alerts/open")).start()
        stack.start_controller()

        def signed_after_prune(_m) -> bool:
            return any(c["data"]["seq"] > pruned.record_seq for c in rec.on("audit/checkpoint"))

        try:
            await rec.await_for(signed_after_prune, timeout=30)
            await wait_until(lambda: "the whole chain verified" in stack.controller_log(400))
        except (AssertionError, TimeoutError):
            raise AssertionError("no checkpoint after the prune:\n" + stack.controller_log()) from None
        status = read(state)
        assert status.journal_first_seq == pruned.anchor_seq and status.faults == (), status
        for doc in rec.on("alerts/open"):
            assert not [
                a for a in doc["data"]["alerts"] if a["kind"] in ("integrity", "journal_integrity")
            ], doc
        assert "integrity fault" not in stack.controller_log(400)
        rec.stop()
        assert stack.stop_controller() == 0
        ok = tablectl("journal", "verify", "--db", str(db), "--manifest", str(manifest))
        assert ok.returncode == 0 and "signed by the key in" in ok.stdout, ok
    finally:
        stack.stop()
