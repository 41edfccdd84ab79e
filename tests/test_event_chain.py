"""The published events' hash chain on the table (issue 25): every envelope names the chain value before it and
hashes to its own; the head survives a restart (it is in the journal's chained ``published`` records); the kept
envelope a re-fetch resends is the same bytes; every signed checkpoint signs the head at its last_event_id."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import public_key_hex, verify_checkpoint
from controller.journal.checkpointer import Checkpointer
from controller.journal.event_chain import EVENT_GENESIS, read_chain
from controller.journal.store import Journal


def publish(j: Journal, n: int) -> None:
    for i in range(n):
        with j.transaction() as tx:
            tx.append("card", {"i": i})
            tx.publish("events/card", "card", {"i": i})
            tx.publish("state/shoe", "shoe", {}, retain=True, data_text='{"left":' + str(300 - i) + "}")


def walk(payloads: list[str]) -> None:
    prev = EVENT_GENESIS
    for text in payloads:
        doc = json.loads(text)
        chained = read_chain(text.encode(), doc["prev"])
        assert chained is not None and chained.self_consistent, text
        assert doc["prev"] == prev, f"event {doc['event_id']} does not follow the one before it"
        prev = doc["chain"]


def test_every_envelope_is_chained_and_the_head_survives_a_restart(tmp_path):
    db = tmp_path / "j.db"
    j = Journal(db, table_id="T1")
    publish(j, 3)
    head = j.last_event_chain
    j.close()
    j = Journal(db, table_id="T1")  # restart: the head comes from the journal, not from memory
    assert j.last_event_chain == head != EVENT_GENESIS
    publish(j, 2)
    kept = j.kept_events(1, 10)
    assert [r.event_id for r in kept] == list(range(1, 11))
    walk([r.payload for r in kept])  # one chain across the restart, from genesis
    assert json.loads(kept[-1].payload)["chain"] == j.last_event_chain
    # a forged envelope that copies a real chain value does not hash to it
    forged = kept[4].payload.replace('"i":2', '"i":9')
    assert not read_chain(forged.encode(), json.loads(forged)["prev"]).self_consistent
    j.close()


def test_each_checkpoint_signs_the_head_of_the_published_events(tmp_path):
    key = Ed25519PrivateKey.generate()
    j = Journal(tmp_path / "j.db", table_id="T1")
    publish(j, 2)
    cp = Checkpointer(j, key, site="S1", table="T1").write()
    assert (
        cp is not None
        and cp.last_event_id == 4
        and cp.event_chain == json.loads(j.kept_events(4, 4)[0].payload)["chain"]
    )
    doc = json.loads(j.kept_events(5, 5)[0].payload)  # the checkpoint's own envelope is chained too
    assert doc["type"] == "checkpoint" and doc["prev"] == cp.event_chain
    signed = verify_checkpoint(doc["data"], public_key_hex(key.public_key()))
    assert signed.event_chain == cp.event_chain
    tampered = doc["data"] | {"event_chain": "1" * 64}
    try:
        verify_checkpoint(tampered, public_key_hex(key.public_key()))
    except ValueError:
        pass
    else:
        raise AssertionError("a checkpoint whose event_chain was changed still verifies")
    j.close()
